//! The checkers. Each returns a [`CheckReport`] whose verdict is Ok, Violation (with the
//! offending operations and an explanation), or Unknown — never a violation it has not
//! proven: a timeout or a bound gives Unknown.

use std::time::Duration;

use serde::Serialize;

use crate::error::HistoryError;
use crate::format::History;
use crate::ops::pair;

pub mod fencing;
pub mod foreign;
pub mod linear;
pub mod lock;
pub mod mutex;
pub mod resource;

/// A verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The property holds.
    Ok,
    /// No answer within the time or bound given.
    Unknown,
    /// The property is violated, with proof.
    Violation,
}

impl Verdict {
    /// DESIGN.md's exit code: 0 ok, 1 violation, 3 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Ok => 0,
            Verdict::Violation => 1,
            Verdict::Unknown => 3,
        }
    }
}

/// Which property a check is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// Never two clients in their critical sections at once.
    MutualExclusion,
    /// The lock operations are a behaviour of the owner-aware, lease-aware, fenced lock.
    LockLinearizability,
    /// The resource operations are a behaviour of the resource spec.
    ResourceLinearizability,
    /// No update lost, no unit oversold.
    ResourceSafety,
    /// Accepted writes carry increasing tokens.
    Fencing,
    /// No client releases a lock it does not hold.
    NoForeignRelease,
}

impl Property {
    /// The name users see.
    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual exclusion",
            Property::LockLinearizability => "lock linearizability",
            Property::ResourceLinearizability => "resource linearizability",
            Property::ResourceSafety => "resource safety",
            Property::Fencing => "fencing",
            Property::NoForeignRelease => "no foreign release",
        }
    }
}

/// An operation named in a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpRef {
    /// The history line of its invocation.
    pub line: usize,
    /// The process (`c0`, `nemesis`).
    pub process: String,
    /// What it was.
    pub description: String,
}

/// The result of one checker.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// The property.
    pub property: Property,
    /// The verdict.
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

/// Which checks to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Every check the history has operations for.
    #[default]
    Auto,
    /// Only mutual exclusion.
    Mutex,
    /// Only the lock spec.
    Lock,
    /// Only the resource (its model from the header or the operations).
    Resource(Option<resource::ResourceModel>),
    /// Only fencing.
    Fencing,
}

/// How to check.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Which checks.
    pub selection: Selection,
    /// Time allowed for each linearizability search; `None`: unlimited.
    pub timeout: Option<Duration>,
    /// Whether to render the HTML report.
    pub html: bool,
}

/// Everything the checkers found about one history.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The file.
    pub source: String,
    /// The worst verdict of all checks (violation > unknown > ok).
    pub verdict: Verdict,
    /// One report per check that ran.
    pub checks: Vec<CheckReport>,
    /// Remarks made while reading.
    pub warnings: Vec<String>,
    /// Data for the HTML report, not serialized.
    #[serde(skip)]
    pub html: Option<crate::html::Page>,
}

/// Runs the selected checks on a history.
pub fn check_history(history: &History, options: &Options) -> Result<Report, HistoryError> {
    let paired = pair(history)?;
    let mut checks = Vec::new();
    let mut html = None;
    let sel = options.selection;
    let has = |f: fn(crate::format::OpKind) -> bool| paired.ops.iter().any(|o| f(o.kind));
    if matches!(sel, Selection::Auto | Selection::Mutex) && mutex::applies(&paired) {
        checks.push(mutex::check(&paired, history.header.reentrant));
    }
    if matches!(sel, Selection::Auto | Selection::Lock) && has(|k| k.is_lock()) {
        let (report, page) = lock::check(history, &paired, options)?;
        checks.push(report);
        html = html.or(page);
        if foreign::applies(&paired) {
            checks.push(foreign::check(&paired));
        }
    }
    if let Selection::Resource(_) | Selection::Auto = sel {
        // A declared resource is checked even with no operations (an empty Jepsen log
        // is trivially linearizable).
        if has(|k| k.is_resource()) || history.header.resource.is_some() {
            let forced = match sel {
                Selection::Resource(m) => m,
                _ => None,
            };
            let (reports, page) = resource::check(history, &paired, forced, options)?;
            checks.extend(reports);
            html = html.or(page);
        }
    }
    if matches!(sel, Selection::Auto | Selection::Fencing) && fencing::applies(&paired) {
        checks.push(fencing::check(&paired));
    }
    if checks.is_empty() {
        return Err(HistoryError::whole(
            &history.source,
            "nothing to check: the history has no lock, resource or critical-section events for the selected model",
        ));
    }
    let verdict = checks
        .iter()
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Ok);
    Ok(Report {
        source: history.source.clone(),
        verdict,
        checks,
        warnings: history.warnings.clone(),
        html,
    })
}

/// Renders a point in a history's time for people: seconds with millisecond precision.
pub fn fmt_time(ns: u64) -> String {
    if ns == u64::MAX {
        return "∞".to_string();
    }
    format!("{:.3}s", ns as f64 / 1e9)
}

pub(crate) fn op_ref(op: &crate::ops::Operation, description: String) -> OpRef {
    OpRef {
        line: op.line(),
        process: format!("c{}", op.process),
        description,
    }
}
