//! Holds a real run's checked history against the model's expected verdict for the
//! same catalog id, property by property. A property the history cannot speak to
//! (liveness, reentrancy) is listed as not compared, never guessed.

use locklab_models::catalog::{Expected, Scenario};
use locklab_traces::check::{Property, Report, Verdict};
use serde::Serialize;

/// One model property, as the model expects it and as the run saw it.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The model's name of the property.
    pub property: String,
    /// Whether the model expects it violated.
    pub model_violated: bool,
    /// What the history showed (`None`: the history cannot tell).
    pub observed: Option<Verdict>,
    /// Whether the two agree (`None`: not compared, or unknown).
    pub agrees: Option<bool>,
    /// The history checks this row was read from.
    pub from: Vec<&'static str>,
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    /// Per property.
    pub rows: Vec<Row>,
    /// The run's verdict on the scenario's properties: violation if any compared
    /// property was violated, unknown if any was unknown, else ok.
    pub verdict: Verdict,
    /// Whether every compared property agrees with the model (false on any
    /// disagreement; an unknown is not a disagreement).
    pub agrees: bool,
}

/// The history checks that speak to a model property.
fn sources(property: &str) -> &'static [Property] {
    use locklab_models::redis::model::props;
    match property {
        p if p == props::MUTEX => &[Property::MutualExclusion],
        p if p == props::FOREIGN => &[Property::NoForeignRelease],
        p if p == props::RESOURCE => &[
            Property::ResourceLinearizability,
            Property::ResourceSafety,
            Property::Fencing,
        ],
        _ => &[],
    }
}

/// The properties the catalog expects violated at the scenario's default bounds.
pub fn expected_at_defaults(scenario: &Scenario) -> Vec<&'static str> {
    match scenario.expected {
        Expected::Holds => Vec::new(),
        Expected::Violates(p) => p.to_vec(),
    }
}

/// Compares `report` with the model's verdict for `scenario`: `expected_violated` are
/// the properties the model violates at the bounds the run used.
pub fn compare(scenario: &Scenario, expected_violated: &[&str], report: &Report) -> Agreement {
    let mut rows = Vec::new();
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
                Some(Verdict::Unknown)
            }
        } else {
            found.iter().map(|c| c.verdict).max()
        };
        let agrees = match observed {
            Some(Verdict::Ok) => Some(!model_violated),
            Some(Verdict::Violation) => Some(model_violated),
            _ => None,
        };
        rows.push(Row {
            property: property.to_string(),
            model_violated,
            observed,
            agrees,
            from: found.iter().map(|c| c.property.name()).collect(),
        });
    }
    let compared = rows.iter().filter_map(|r| r.observed);
    let verdict = compared.max().unwrap_or(Verdict::Unknown);
    let agrees = rows.iter().all(|r| r.agrees != Some(false));
    Agreement {
        rows,
        verdict,
        agrees,
    }
}
