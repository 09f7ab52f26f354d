//! What a check says: its verdict, the property it judged, the operations it names
//! and how it explains itself. The backends' findings report in the same words, so
//! they take these from here and the checks' dispatch stays the only way in.

use serde::Serialize;

/// The one property and verdict vocabulary, shared with the model checker.
pub use locklab_models::registry::{Property, Verdict};

/// An operation named in a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OpRef {
    /// The history line of its invocation.
    pub line: usize,
    /// The process (`c0`, `nemesis`).
    pub process: String,
    /// What it was.
    pub description: String,
}

/// The result of one checker.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// What was judged; JSON names it in kebab case, reports by [`Property::name`].
    pub property: Property,
    /// `violation` comes with `ops` naming the operations that prove it; `unknown` means
    /// time or budget ran out.
    pub verdict: Verdict,
    /// One sentence.
    pub summary: String,
    /// The offending operations (empty when Ok).
    pub ops: Vec<OpRef>,
    /// The explanation, line by line.
    pub explanation: Vec<String>,
    /// Counts (operations checked, lost updates, oversold units, …).
    pub stats: serde_json::Map<String, serde_json::Value>,
}

impl CheckReport {
    /// A report with a verdict and summary, nothing else yet.
    pub fn new(property: Property, verdict: Verdict, summary: impl Into<String>) -> Self {
        CheckReport {
            property,
            verdict,
            summary: summary.into(),
            ops: Vec::new(),
            explanation: Vec::new(),
            stats: serde_json::Map::new(),
        }
    }

    /// Adds a count.
    pub fn stat(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.stats.insert(name.to_string(), value.into());
        self
    }
}

/// Something the checks found that is no property of the lock and changes no verdict
/// (whether the servers behaved as one Redis; how many clients a ZooKeeper release
/// wakes: see [`crate::backend`]).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// What was looked at (`one Redis`).
    pub name: &'static str,
    /// Ok: it holds; Violation: it does not, with proof; Unknown: no answer.
    pub verdict: Verdict,
    /// One sentence.
    pub summary: String,
    /// The operations that show it (empty when it holds).
    pub ops: Vec<OpRef>,
    /// The explanation, line by line.
    pub explanation: Vec<String>,
    /// Counts.
    pub stats: serde_json::Map<String, serde_json::Value>,
}

impl Finding {
    /// A finding with a verdict and summary, nothing else yet.
    pub fn new(name: &'static str, verdict: Verdict, summary: impl Into<String>) -> Self {
        Finding {
            name,
            verdict,
            summary: summary.into(),
            ops: Vec::new(),
            explanation: Vec::new(),
            stats: serde_json::Map::new(),
        }
    }

    /// Adds a count.
    pub fn stat(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.stats.insert(name.to_string(), value.into());
        self
    }
}

/// The states a search may be in, for people: "a or b or c", or the first few and how
/// many more (a run of unanswered grants leaves hundreds, which say nothing one by one).
pub fn one_of(states: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut distinct: Vec<&String> = Vec::new();
    for s in states {
        if !distinct.contains(&s) {
            distinct.push(s);
        }
    }
    let head: Vec<&str> = distinct.iter().take(SHOWN).map(|s| s.as_str()).collect();
    match distinct.len().saturating_sub(SHOWN) {
        0 => head.join(" or "),
        more => format!("{} or one of {more} more", head.join(" or ")),
    }
}

/// Times in reports: the one formatter, shared with the specs' descriptions.
pub use locklab_models::spec::fmt_time;

pub(crate) fn op_ref(op: &crate::ops::Operation, description: String) -> OpRef {
    OpRef {
        line: op.line(),
        process: format!("c{}", op.process),
        description,
    }
}
