//! Whether a scenario's run meets one requirement, and if not, the text that says so:
//! the scenario, the property, the checks' words and the history lines they name.

use locklab_jepsen::RunReport;
use locklab_traces::check::{CheckReport, Verdict};
use serde::Serialize;

use super::config::Requirement;
use crate::commands::check_history::verdict_word;

/// How a requirement came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Result {
    /// It holds.
    Pass,
    /// The run gave no answer (a check's budget, an environment that spoiled every
    /// attempt).
    Unknown,
    /// The scenario could not run (the client would not start, a server is missing).
    Error,
    /// It does not hold, with proof.
    Fail,
}

/// One requirement's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    /// What was required.
    pub requirement: Requirement,
    /// How it came out.
    pub result: Result,
    /// One line.
    pub summary: String,
    /// The full text (failure details with history lines); empty on a pass.
    pub details: String,
}

/// Judges `requirement` on `run`, whose history is at `history` (for the lines).
pub fn judge(scenario: &str, requirement: Requirement, run: &RunReport, history: &str) -> Judged {
    let (result, summary, details) = match requirement.property() {
        None => agreement(scenario, run, history),
        Some(property) => match run.report.checks.iter().find(|c| c.property == property) {
            None => (
                Result::Unknown,
                format!(
                    "{}: not checked (the history has nothing it applies to)",
                    property.name()
                ),
                String::new(),
            ),
            Some(c) => {
                let result = match c.verdict {
                    Verdict::Ok => Result::Pass,
                    Verdict::Violation => Result::Fail,
                    Verdict::Unknown => Result::Unknown,
                };
                let summary = format!(
                    "{}: {} — {}",
                    property.name(),
                    verdict_word(c.verdict),
                    c.summary
                );
                let details = if result == Result::Pass {
                    String::new()
                } else {
                    let mut d = format!(
                        "scenario {scenario}: {} must hold, and the run says {}\n",
                        property.name(),
                        verdict_word(c.verdict)
                    );
                    d.push_str(&check_text(c, history));
                    d.push_str(&timeline(run));
                    d
                };
                (result, summary, details)
            }
        },
    };
    Judged {
        requirement,
        result,
        summary,
        details,
    }
}

fn agreement(scenario: &str, run: &RunReport, history: &str) -> (Result, String, String) {
    let a = &run.agreement;
    let row_text = |r: &locklab_jepsen::agreement::Row| {
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
    let checks_of = |r: &locklab_jepsen::agreement::Row| -> String {
        run.report
            .checks
            .iter()
            .filter(|c| r.from.contains(&c.property.name()))
            .map(|c| check_text(c, history))
            .collect()
    };
    if !a.agrees {
        let bad: Vec<_> = a.rows.iter().filter(|r| r.agrees == Some(false)).collect();
        let mut d = format!(
            "scenario {scenario}: the run must keep what the model says it keeps, and it DISAGREES:\n"
        );
        for r in &bad {
            d.push_str(&format!("  {}\n", row_text(r)));
            d.push_str(&checks_of(r));
        }
        d.push_str(&timeline(run));
        let summary = format!(
            "disagrees with the model: {}",
            bad.iter()
                .map(|r| row_text(r))
                .collect::<Vec<_>>()
                .join("; ")
        );
        return (Result::Fail, summary, d);
    }
    let unknown: Vec<_> = a
        .rows
        .iter()
        .filter(|r| r.observed == Some(Verdict::Unknown))
        .collect();
    if !unknown.is_empty() || a.verdict == Verdict::Unknown {
        let mut d = format!(
            "scenario {scenario}: the run gave no answer on a property the model decides:\n"
        );
        for r in &unknown {
            d.push_str(&format!("  {}\n", row_text(r)));
            d.push_str(&checks_of(r));
        }
        let summary = format!(
            "unknown: {}",
            unknown
                .iter()
                .map(|r| row_text(r))
                .collect::<Vec<_>>()
                .join("; ")
        );
        return (Result::Unknown, summary, d);
    }
    let summary = format!(
        "agrees with the model ({})",
        a.rows
            .iter()
            .filter(|r| r.agrees.is_some())
            .map(row_text)
            .collect::<Vec<_>>()
            .join("; ")
    );
    (Result::Pass, summary, String::new())
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
