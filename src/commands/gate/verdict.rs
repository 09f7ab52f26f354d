//! Whether a scenario's run meets one requirement, and if not, the text that says so:
//! the scenario, the requirement, the property, the checks' words and the history lines
//! they name. A run that tested less than its scenario asked (no critical section, a
//! fault that never fired) passes no requirement: it is unknown, with the reason.

use locklab_jepsen::agreement::progress::{ModelSays, OrderAgreement, StarvationAgreement};
use locklab_jepsen::agreement::{answer_word, Answer, Row};
use locklab_jepsen::RunReport;
use locklab_traces::check::{CheckReport, Verdict};
use serde::Serialize;

use super::config::Requirement;
use crate::commands::check_history::verdict_word;

/// How a requirement came out; JSON writes it in every command's verdict words (`ok`,
/// `unknown`, `error`, `violation`), text as the gate's (`pass`, `FAIL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Result {
    /// It holds.
    #[serde(rename = "ok")]
    Pass,
    /// The run gave no answer (a check's budget, a run that tested nothing, an
    /// environment that spoiled every attempt).
    Unknown,
    /// The scenario could not run (the client would not start, a server is missing).
    Error,
    /// It does not hold, with proof.
    #[serde(rename = "violation")]
    Fail,
}

/// One requirement's outcome.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Judged {
    /// What was required.
    pub requirement: Requirement,
    /// How it came out.
    #[serde(rename = "verdict")]
    pub result: Result,
    /// One line.
    pub summary: String,
    /// The full text (failure details with history lines); empty on a pass.
    pub details: String,
    /// Violations the checks found that this requirement does not ask about: shown
    /// beside a pass too, never hidden.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_found: Vec<String>,
}

/// Judges `requirement` on `run`, whose history is at `history` (for the lines).
pub fn judge(scenario: &str, requirement: Requirement, run: &RunReport, history: &str) -> Judged {
    let (mut result, mut summary, mut details) = match requirement {
        Requirement::AtLeastAsSafeAsModel | Requirement::AgreesWithModel => {
            model(scenario, requirement, run, history)
        }
        Requirement::NoViolation => no_violation(scenario, run, history),
        Requirement::AtLeastAsLiveAsModel => live(scenario, run),
        Requirement::AtLeastAsFairAsModel => {
            fair(scenario, run.order.as_ref(), run.starvation.as_ref())
        }
        _ => match requirement.property() {
            Some(property) => match run.report.checks.iter().find(|c| c.property == property) {
                None => (
                    Result::Unknown,
                    format!(
                        "{}: not checked (the history has nothing it applies to)",
                        property.name()
                    ),
                    String::new(),
                ),
                Some(c) => one_check(scenario, c, run, history),
            },
            None => (Result::Unknown, String::new(), String::new()),
        },
    };
    // A run that tested nothing proves nothing holds.
    let shortfalls = run.agreement.exercised.shortfalls();
    let said = |s: &str| shortfalls.iter().all(|w| s.contains(w.as_str()));
    if result == Result::Unknown && !shortfalls.is_empty() && !said(&summary) {
        // Unknown for a reason of its own: the run's shortfalls come first, they are
        // what to fix.
        summary = format!("unknown: {}; {summary}", shortfalls.join("; "));
        details = format!(
            "scenario {scenario}: {}: the run tested less than the scenario asks:\n{}{details}",
            requirement.name(),
            shortfalls
                .iter()
                .map(|w| format!("  {w}\n"))
                .collect::<String>()
        );
    }
    if result == Result::Pass && !shortfalls.is_empty() {
        result = Result::Unknown;
        summary = format!("unknown: {}", shortfalls.join("; "));
        details = format!(
            "scenario {scenario}: {} cannot be judged on this run:\n",
            requirement.name()
        );
        for why in &shortfalls {
            details.push_str(&format!("  {why}\n"));
        }
    }
    let asked: Vec<&str> = match requirement {
        Requirement::NoViolation => run
            .report
            .checks
            .iter()
            .map(|c| c.property.name())
            .collect(),
        Requirement::AtLeastAsSafeAsModel | Requirement::AgreesWithModel => run
            .agreement
            .rows
            .iter()
            .flat_map(|r| r.from.clone())
            .collect(),
        _ => requirement
            .property()
            .map(|p| p.name())
            .into_iter()
            .collect(),
    };
    let also_found = run
        .report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation && !asked.contains(&c.property.name()))
        .map(|c| format!("{} VIOLATION — {}", c.property.name(), c.summary))
        .collect();
    Judged {
        requirement,
        result,
        summary,
        details,
        also_found,
    }
}

fn one_check(
    scenario: &str,
    c: &CheckReport,
    run: &RunReport,
    history: &str,
) -> (Result, String, String) {
    let result = match c.verdict {
        Verdict::Ok => Result::Pass,
        Verdict::Violation => Result::Fail,
        Verdict::Unknown => Result::Unknown,
    };
    let summary = format!(
        "{}: {} — {}",
        c.property.name(),
        verdict_word(c.verdict),
        c.summary
    );
    let details = if result == Result::Pass {
        String::new()
    } else {
        let mut d = format!(
            "scenario {scenario}: {} must hold, and the run says {}\n",
            c.property.name(),
            verdict_word(c.verdict)
        );
        d.push_str(&check_text(c, history));
        d.push_str(&timeline(run));
        d
    };
    (result, summary, details)
}

/// `at-least-as-live-as-model`: the run's progress after its fault beside the model's.
fn live(scenario: &str, run: &RunReport) -> (Result, String, String) {
    let Some(p) = &run.progress else {
        return (
            Result::Unknown,
            "unknown: no client crashed or lost a reply in this run, so progress after a fault was not observed".into(),
            String::new(),
        );
    };
    match p.at_least_as_live {
        Answer::Yes => (Result::Pass, p.summary.clone(), String::new()),
        Answer::Unknown => (Result::Unknown, format!("unknown: {}", p.summary), String::new()),
        Answer::No => (
            Result::Fail,
            format!("stuck after the fault: {}", p.summary),
            format!(
                "scenario {scenario}: at-least-as-live-as-model (the lock must be granted again after a fault wherever the model says the protocol is eventually free), and it was not:\n  {}\n  {}\n{}",
                p.summary,
                run.liveness.as_ref().map_or("", |l| l.summary.as_str()),
                timeline(run)
            ),
        ),
    }
}

/// `at-least-as-fair-as-model`: the grant order and the longest wait beside the
/// model's `fifo` and `starvation-free`. Only a proven out-of-order grant fails; a
/// long wait is unknown, since no finite run shows "for ever".
fn fair(
    scenario: &str,
    order: Option<&OrderAgreement>,
    starvation: Option<&StarvationAgreement>,
) -> (Result, String, String) {
    if let Some(o) = order.filter(|o| o.model == ModelSays::Holds && o.agrees == Answer::No) {
        return (
            Result::Fail,
            format!("out of request order: {}", o.summary),
            format!(
                "scenario {scenario}: at-least-as-fair-as-model (grants must follow request order wherever the model says fifo holds), and one did not:\n  {}\n",
                o.observed
            ),
        );
    }
    let mut passed = Vec::new();
    let mut unknown = Vec::new();
    match order {
        Some(o) if o.model == ModelSays::Unknown => unknown.push(o.summary.clone()),
        Some(o) => passed.push(o.summary.clone()),
        // No numbered requests (an external client, a service without a queue): the
        // order is not compared, and the wait below is all there is.
        None => {}
    }
    match starvation {
        Some(s) if s.model == ModelSays::Violated || s.agrees == Answer::Yes => {
            passed.push(s.summary.clone());
        }
        Some(s) => unknown.push(s.summary.clone()),
        None => unknown.push(
            "no client waited while another was granted, so fairness was not observed".into(),
        ),
    }
    if unknown.is_empty() {
        (Result::Pass, passed.join("; "), String::new())
    } else {
        (
            Result::Unknown,
            format!("unknown: {}", unknown.join("; ")),
            String::new(),
        )
    }
}

fn no_violation(scenario: &str, run: &RunReport, history: &str) -> (Result, String, String) {
    let broken: Vec<&CheckReport> = run
        .report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation)
        .collect();
    if broken.is_empty() {
        let unknown: Vec<&str> = run
            .report
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Unknown)
            .map(|c| c.property.name())
            .collect();
        return if unknown.is_empty() {
            (
                Result::Pass,
                format!("every check holds ({} checks)", run.report.checks.len()),
                String::new(),
            )
        } else {
            (
                Result::Unknown,
                format!("unknown: {} undecided", unknown.join(", ")),
                format!(
                    "scenario {scenario}: no-violation: {} gave no answer\n",
                    unknown.join(", ")
                ),
            )
        };
    }
    let mut d = format!("scenario {scenario}: no check may find a violation, and these did:\n");
    for c in &broken {
        d.push_str(&check_text(c, history));
    }
    d.push_str(&timeline(run));
    let summary = format!(
        "violated: {}",
        broken
            .iter()
            .map(|c| c.property.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    (Result::Fail, summary, d)
}

/// `at-least-as-safe-as-model` and `agrees-with-model`: the agreement's answer.
fn model(
    scenario: &str,
    requirement: Requirement,
    run: &RunReport,
    history: &str,
) -> (Result, String, String) {
    let a = &run.agreement;
    let (answer, failed): (Answer, fn(&Row) -> bool) = match requirement {
        Requirement::AgreesWithModel => (a.exact, |r| r.agrees == Some(false)),
        _ => (a.at_least_as_safe, |r| r.at_least_as_safe == Some(false)),
    };
    let question = match requirement {
        Requirement::AgreesWithModel => {
            "the run must keep what the model says the protocol keeps and break what it breaks"
        }
        _ => "the run must keep at least what the model says the protocol keeps",
    };
    let row_text = |r: &Row| {
        format!(
            "{}: model {}, run {}",
            r.property,
            if r.model_violated {
                "violated"
            } else {
                "holds"
            },
            r.observed.map_or("not observable", verdict_word)
        )
    };
    let checks_of = |r: &Row| -> String {
        run.report
            .checks
            .iter()
            .filter(|c| r.from.contains(&c.property.name()))
            .map(|c| check_text(c, history))
            .collect()
    };
    match answer {
        Answer::No => {
            let bad: Vec<&Row> = a.rows.iter().filter(|r| failed(r)).collect();
            let mut d = format!(
                "scenario {scenario}: {} ({question}), and it does not:\n",
                requirement.name()
            );
            for r in &bad {
                d.push_str(&format!("  {} — {}\n", row_text(r), r.mark()));
                d.push_str(&checks_of(r));
            }
            d.push_str(&timeline(run));
            let summary = format!(
                "{}: NO — {}",
                requirement.name(),
                bad.iter()
                    .map(|r| row_text(r))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            (Result::Fail, summary, d)
        }
        Answer::Unknown => {
            let mut d = format!(
                "scenario {scenario}: {} ({question}): the run gave no answer:\n",
                requirement.name()
            );
            for why in &a.unknown_because {
                d.push_str(&format!("  {why}\n"));
            }
            for r in a
                .rows
                .iter()
                .filter(|r| r.observed == Some(Verdict::Unknown))
            {
                d.push_str(&checks_of(r));
            }
            let summary = format!(
                "{}: unknown — {}",
                requirement.name(),
                a.unknown_because.join("; ")
            );
            (Result::Unknown, summary, d)
        }
        Answer::Yes => {
            let summary = format!(
                "{}: {} ({}; agrees with the model: {})",
                requirement.name(),
                answer_word(answer),
                a.rows
                    .iter()
                    .filter(|r| r.observed.is_some())
                    .map(row_text)
                    .collect::<Vec<_>>()
                    .join("; "),
                answer_word(a.exact)
            );
            (Result::Pass, summary, String::new())
        }
    }
}

/// A check's verdict, its explanation and the history lines it names.
fn check_text(c: &CheckReport, history: &str) -> String {
    let mut t = format!(
        "    {} {}: {}\n",
        c.property.name(),
        verdict_word(c.verdict),
        c.summary
    );
    for line in &c.explanation {
        t.push_str(&format!("      {line}\n"));
    }
    for op in &c.ops {
        t.push_str(&format!(
            "      {history}:{}: {} {}\n",
            op.line, op.process, op.description
        ));
    }
    t
}

fn timeline(run: &RunReport) -> String {
    match &run.timeline {
        Some(lines) if !lines.is_empty() => {
            let mut t = String::from("  the offending window:\n");
            for l in lines {
                t.push_str(&format!("    {l}\n"));
            }
            t
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(model: ModelSays, agrees: Answer) -> OrderAgreement {
        OrderAgreement {
            model,
            observed_out_of_order: agrees == Answer::No,
            agrees,
            observed: "c2's grant passed over c1's request 4".into(),
            summary: "order".into(),
        }
    }

    fn waited(model: ModelSays, agrees: Answer) -> StarvationAgreement {
        StarvationAgreement {
            model,
            observed_past_a_queue: agrees != Answer::Yes,
            agrees,
            observed: "c1 waited".into(),
            summary: "wait".into(),
        }
    }

    #[test]
    fn only_a_proven_out_of_order_grant_fails_fairness() {
        let (r, _, d) = fair(
            "zk-sequential",
            Some(&order(ModelSays::Holds, Answer::No)),
            Some(&waited(ModelSays::Holds, Answer::Yes)),
        );
        assert_eq!(r, Result::Fail);
        assert!(d.contains("c1's request 4"), "{d}");
        let fair_run = fair(
            "zk-sequential",
            Some(&order(ModelSays::Holds, Answer::Yes)),
            Some(&waited(ModelSays::Holds, Answer::Yes)),
        );
        assert_eq!(fair_run.0, Result::Pass);
        // A long wait on a lock the model calls fair proves no "for ever".
        let long = fair(
            "zk-sequential",
            Some(&order(ModelSays::Holds, Answer::Yes)),
            Some(&waited(ModelSays::Holds, Answer::Unknown)),
        );
        assert_eq!(long.0, Result::Unknown);
        // A retry loop the model says may starve a client promises nothing to keep.
        let retry = fair(
            "redis-lua",
            None,
            Some(&waited(ModelSays::Violated, Answer::Yes)),
        );
        assert_eq!(retry.0, Result::Pass);
        assert_eq!(fair("redis-lua", None, None).0, Result::Unknown);
    }
}
