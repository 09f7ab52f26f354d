//! Holds a real run's checked history against the model's expected verdict for the
//! same catalog id, property by property, and answers the two questions a CI asks:
//! - **at least as safe as the model**: does the run keep every property the model
//!   says the protocol keeps? (A property the model breaks may hold: a safer lock, or
//!   a run that missed the window, passes.)
//! - **agrees with the model**: does it keep what the model keeps *and* break what it
//!   breaks?
//!
//! Neither is ever answered "yes" by a run that tested nothing: no critical section
//! entered, a fault step that never fired, or a compared property the history could
//! not decide makes the answer unknown, with the reason. A property the history cannot
//! speak to (liveness, reentrancy) is listed as not compared, never guessed. Every
//! violation any check found is reported, compared or not.

use locklab_models::catalog::{Expected, Scenario};
use locklab_models::registry::Property;
use locklab_traces::check::{Report, Verdict};
use serde::Serialize;

/// The answer to one of the run's questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// Yes, with a run that exercised the scenario.
    Yes,
    /// No answer: the run could not show it (see [`Agreement::unknown_because`]).
    Unknown,
    /// No, with proof.
    No,
}

/// One model property, as the model expects it and as the run saw it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Row {
    /// The model's property.
    pub property: Property,
    /// Whether the model expects it violated.
    pub model_violated: bool,
    /// What the history showed (`None`: the history cannot tell).
    pub observed: Option<Verdict>,
    /// Whether the two agree (`None`: not compared, or unknown).
    pub agrees: Option<bool>,
    /// Whether the run kept at least what the model keeps of this property (`None`:
    /// unknown, or not compared). A property the model breaks is always kept "at
    /// least" as well.
    pub at_least_as_safe: Option<bool>,
    /// The history checks this row was read from.
    pub from: Vec<&'static str>,
}

impl Row {
    /// The row's standing in a word or two: `agrees`, `DISAGREES (safer)`,
    /// `DISAGREES (less safe)`, `unknown`, `not compared`.
    pub fn mark(&self) -> &'static str {
        match (self.agrees, self.at_least_as_safe) {
            (Some(true), _) => "agrees",
            (Some(false), Some(true)) => "DISAGREES (safer)",
            (Some(false), _) => "DISAGREES (less safe)",
            (None, _) if self.observed.is_some() => "unknown",
            (None, _) => "not compared",
        }
    }
}

/// A violation found by a history check that no model property of the scenario is
/// compared with (lock linearizability on most rows): never hidden, never a
/// disagreement.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct AlsoFound {
    /// The history check whose verdict was `violation` (lock linearizability, say); JSON
    /// names it in kebab case.
    pub check: Property,
    /// Its summary.
    pub summary: String,
}

/// What a run did of what its scenario asked: enough to tell a run that tested the
/// scenario from one that tested nothing.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Exercised {
    /// Critical sections the clients entered.
    pub sections: u64,
    /// Whether the scenario's workload takes a lock at all (the `inventory-*` rows'
    /// buyers do not): then a run without sections tested nothing.
    pub expects_sections: bool,
    /// The fault steps of the plan that never fired, each with why.
    pub unfired: Vec<String>,
    /// Why the model's verdict is bounded below what the run did, when it is (a random
    /// schedule with more faults of a kind than the model was checked with): then what
    /// the model keeps is not proven kept at the run's faults, and a run that breaks it
    /// is not proven less safe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_bound: Option<String>,
}

impl Exercised {
    /// Why the run tested less than its scenario asked, if it did: no critical section
    /// entered, fault steps that never fired. Any such reason makes every "yes" the run
    /// could give unknown.
    pub fn shortfalls(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.expects_sections && self.sections == 0 {
            why.push(
                "no client entered its critical section: the run tested nothing of the lock"
                    .to_string(),
            );
        }
        for step in &self.unfired {
            why.push(format!("a fault step never fired: {step}"));
        }
        why
    }
}

/// The comparison.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Agreement {
    /// Per property.
    pub rows: Vec<Row>,
    /// The run's verdict: violation if any check of the history found one (compared
    /// or not); else unknown if a compared property was unknown or the run tested
    /// nothing; else ok.
    pub verdict: Verdict,
    /// Whether the run keeps at least what the model says the protocol keeps.
    pub at_least_as_safe: Answer,
    /// Whether the run keeps what the model keeps and breaks what it breaks.
    pub exact: Answer,
    /// Why an answer is unknown: the run tested nothing, a fault never fired, a
    /// compared property could not be decided.
    pub unknown_because: Vec<String>,
    /// Violations of checks not compared with the model.
    pub also_found: Vec<AlsoFound>,
    /// What the run exercised.
    pub exercised: Exercised,
}

impl Agreement {
    /// Whether the run agrees with the model in both directions, on a run that tested
    /// the scenario.
    pub fn agrees(&self) -> bool {
        self.exact == Answer::Yes
    }

    /// One line: the verdict, what it comes from when no compared property gave it,
    /// and the agreement (`VIOLATION (lock linearizability: a check not compared with
    /// the model for this scenario)  —  the properties compared agree with the model`).
    ///
    /// A violation only an uncompared check found is named beside the verdict, so that
    /// "VIOLATION" and "agrees" do not read as a contradiction.
    pub fn headline(&self) -> String {
        let mut line = verdict_word(self.verdict).to_string();
        if !self.also_found.is_empty() {
            let found: Vec<&str> = self.also_found.iter().map(|a| a.check.name()).collect();
            let what = match found.len() {
                1 => "a check",
                _ => "checks",
            };
            line.push_str(&format!(
                " ({}: {what} not compared with the model for this scenario)",
                found.join(", ")
            ));
        }
        let standing = match self.exact {
            Answer::Yes if !self.also_found.is_empty() => {
                "the properties compared agree with the model".to_string()
            }
            _ => self.standing(),
        };
        format!("{line}  —  {standing}")
    }

    /// How the run stands against the model, in words.
    pub fn standing(&self) -> String {
        let names = |f: &dyn Fn(&Row) -> bool| -> String {
            self.rows
                .iter()
                .filter(|r| f(r))
                .map(|r| r.property.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (self.exact, self.at_least_as_safe) {
            (Answer::Yes, _) => "agrees with the model".to_string(),
            (Answer::No, Answer::No) => format!(
                "DISAGREES with the model: breaks {}, which the model keeps (a lock less safe than its protocol, or a bug in the model, the harness or the server)",
                names(&|r| r.at_least_as_safe == Some(false))
            ),
            (Answer::No, _) => format!(
                "DISAGREES with the model: keeps {}, which the model breaks (a lock safer than the protocol, or a run that missed the window); at least as safe as the model: {}",
                names(&|r| r.agrees == Some(false)),
                answer_word(self.at_least_as_safe)
            ),
            (Answer::Unknown, _) => format!(
                "agreement UNKNOWN: {}",
                self.unknown_because.join("; ")
            ),
        }
    }
}

/// `ok`, `VIOLATION`, `unknown`.
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::Violation => "VIOLATION",
        Verdict::Unknown => "unknown",
    }
}

/// `yes`, `NO`, `unknown`.
pub fn answer_word(a: Answer) -> &'static str {
    match a {
        Answer::Yes => "yes",
        Answer::No => "NO",
        Answer::Unknown => "unknown",
    }
}

/// The history checks that speak to a model property: three checks of a history
/// together stand for a model's resource safety; this is the one mapping.
fn sources(property: Property) -> &'static [Property] {
    match property {
        Property::MutualExclusion => &[Property::MutualExclusion],
        Property::NoForeignRelease => &[Property::NoForeignRelease],
        Property::ResourceSafety => &[
            Property::ResourceLinearizability,
            Property::ResourceSafety,
            Property::Fencing,
        ],
        // A finite history cannot show a lock that is never freed, nor count holds.
        Property::Liveness | Property::Reentrancy => &[],
        // History properties, which no model states: nothing to compare with.
        Property::LockLinearizability | Property::ResourceLinearizability | Property::Fencing => {
            &[]
        }
    }
}

/// The properties the catalog expects violated at the scenario's default bounds.
pub fn expected_at_defaults(scenario: &Scenario) -> Vec<Property> {
    match scenario.expected {
        Expected::Holds => Vec::new(),
        Expected::Violates(p) => p.to_vec(),
    }
}

/// Compares `report` with the model's verdict for `scenario`: `expected_violated` are
/// the properties the model violates at the bounds the run used; `exercised` is what
/// the run did.
pub fn compare(
    scenario: &Scenario,
    expected_violated: &[Property],
    report: &Report,
    exercised: Exercised,
) -> Agreement {
    let mut rows = Vec::new();
    let mut unknown_because = exercised.shortfalls();
    for &property in scenario.properties {
        let model_violated = expected_violated.contains(&property);
        let wanted = sources(property);
        let found: Vec<_> = report
            .checks
            .iter()
            .filter(|c| wanted.contains(&c.property))
            .collect();
        let observed = if wanted.is_empty() {
            None
        } else if found.is_empty() {
            // Nothing to judge it by: no successful release means no foreign release;
            // any other missing check means the run did not exercise the property.
            if wanted == [Property::NoForeignRelease] {
                Some(Verdict::Ok)
            } else {
                unknown_because.push(format!(
                    "{property}: the history has nothing its checks apply to"
                ));
                Some(Verdict::Unknown)
            }
        } else {
            found.iter().map(|c| c.verdict).max()
        };
        if observed == Some(Verdict::Unknown) && !found.is_empty() {
            let why: Vec<String> = found
                .iter()
                .filter(|c| c.verdict == Verdict::Unknown)
                .map(|c| format!("{}: {}", c.property.name(), c.summary))
                .collect();
            unknown_because.push(format!("{property} undecided ({})", why.join("; ")));
        }
        // A model verdict of "kept" within a smaller fault budget than the run's
        // proves nothing about the run's faults; "broken" does (budgets are upper
        // bounds: what breaks with 8 pauses breaks with 12).
        let bounded = !model_violated && exercised.model_bound.is_some();
        let agrees = match observed {
            Some(_) if bounded => None,
            Some(Verdict::Ok) => Some(!model_violated),
            Some(Verdict::Violation) => Some(model_violated),
            _ => None,
        };
        let at_least_as_safe = match (model_violated, observed) {
            (_, None) => None,
            (true, Some(_)) => Some(true),
            (false, Some(Verdict::Ok)) => Some(true),
            (false, Some(Verdict::Violation)) if bounded => None,
            (false, Some(Verdict::Violation)) => Some(false),
            (false, Some(Verdict::Unknown)) => None,
        };
        rows.push(Row {
            property,
            model_violated,
            observed,
            agrees,
            at_least_as_safe,
            from: found.iter().map(|c| c.property.name()).collect(),
        });
    }
    if rows.iter().all(|r| r.observed.is_none()) {
        unknown_because.push(format!(
            "none of the scenario's properties ({}) can be judged from a history",
            rows.iter()
                .map(|r| r.property.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let compared: Vec<&'static str> = rows.iter().flat_map(|r| r.from.clone()).collect();
    let also_found: Vec<AlsoFound> = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation && !compared.contains(&c.property.name()))
        .map(|c| AlsoFound {
            check: c.property,
            summary: c.summary.clone(),
        })
        .collect();
    let tested = unknown_because.is_empty();
    if let Some(why) = &exercised.model_bound {
        if rows
            .iter()
            .any(|r| !r.model_violated && r.observed.is_some())
        {
            unknown_because.push(why.clone());
        }
    }
    let answer = |f: fn(&Row) -> Option<bool>| {
        if rows.iter().any(|r| f(r) == Some(false)) {
            Answer::No
        } else if tested && !rows.iter().any(|r| r.observed.is_some() && f(r).is_none()) {
            Answer::Yes
        } else {
            Answer::Unknown
        }
    };
    let exact = answer(|r| r.agrees);
    let at_least_as_safe = answer(|r| r.at_least_as_safe);
    let violated =
        rows.iter().any(|r| r.observed == Some(Verdict::Violation)) || !also_found.is_empty();
    let verdict = if violated {
        Verdict::Violation
    } else if tested {
        Verdict::Ok
    } else {
        Verdict::Unknown
    };
    Agreement {
        rows,
        verdict,
        at_least_as_safe,
        exact,
        unknown_because,
        also_found,
        exercised,
    }
}

pub mod progress;

#[cfg(test)]
mod tests;
