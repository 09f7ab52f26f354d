//! The checkers. Each returns a [`CheckReport`] whose verdict is Ok, Violation (with the
//! offending operations and an explanation), or Unknown — never a violation it has not
//! proven: a timeout or a bound gives Unknown.

use std::time::{Duration, Instant};

use linear::Budget;

use serde::Serialize;

use crate::error::HistoryError;
use crate::format::{History, LockModel};
use crate::ops::pair;

pub(crate) use report::op_ref;
pub use report::{fmt_time, one_of, CheckReport, Finding, OpRef, Property, Verdict};

pub mod fencing;
pub mod foreign;
pub mod linear;
pub mod liveness;
pub mod lock;
pub mod mutex;
pub mod overtaking;
pub mod report;
pub mod resource;

/// Which checks to run (`check-history --model`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Every check the history has operations for, with the models its header declares.
    #[default]
    Auto,
    /// Knossos's mutex (`--model mutex`): the acquire/release operations must linearize
    /// as an ownerless, lease-less mutex, as Jepsen users mean it.
    Mutex,
    /// Only the overlap of critical sections (`--model critical-sections`).
    CriticalSections,
    /// Only locklab's owner-aware, leased, fenced lock spec (`--model lock`).
    Lock,
    /// Only the resource: this model, or the header's or the operations' one.
    Resource(Option<crate::format::ResourceSpec>),
    /// Only fencing.
    Fencing,
}

impl Selection {
    /// Every `--model` name.
    pub const NAMES: [&'static str; 11] = [
        "auto",
        "mutex",
        "critical-sections",
        "lock",
        "fencing",
        "register",
        "cas-register",
        "counter",
        "kv",
        "inventory",
        "resource",
    ];

    /// The selection a `--model` name means; `initial` sets the starting value of a
    /// register, counter or inventory (Knossos's `(cas-register 0)`), otherwise the
    /// header's is kept.
    pub fn parse(
        name: &str,
        initial: Option<i64>,
        header: &crate::format::Header,
    ) -> Option<Selection> {
        use crate::format::ResourceSpec as R;
        let declared = header.resource.as_ref();
        let start = |fallback: Option<i64>| initial.or(fallback);
        let declared_initial = declared.and_then(|r| match r {
            R::Register { initial } | R::CasRegister { initial } => *initial,
            R::Counter { initial } | R::Inventory { initial, .. } => Some(*initial),
            R::Kv => None,
        });
        Some(match name {
            "auto" => Selection::Auto,
            "mutex" => Selection::Mutex,
            "critical-sections" => Selection::CriticalSections,
            "lock" => Selection::Lock,
            "fencing" => Selection::Fencing,
            "resource" => Selection::Resource(None),
            "register" => Selection::Resource(Some(R::Register {
                initial: start(declared_initial),
            })),
            "cas-register" => Selection::Resource(Some(R::CasRegister {
                initial: start(declared_initial),
            })),
            "counter" => Selection::Resource(Some(R::Counter {
                initial: start(declared_initial).unwrap_or(0),
            })),
            "kv" => Selection::Resource(Some(R::Kv)),
            "inventory" => Selection::Resource(Some(R::Inventory {
                initial: start(declared_initial).unwrap_or(0),
                writes_are_updates: matches!(
                    declared,
                    Some(R::Inventory {
                        writes_are_updates: true,
                        ..
                    })
                ),
            })),
            _ => return None,
        })
    }
}

/// How to check.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Which checks.
    pub selection: Selection,
    /// Time allowed for all the checks of a history together; `None`: unlimited. Past
    /// it the verdict is unknown. The findings, which have no part in the verdict, get
    /// as much again after them.
    pub timeout: Option<Duration>,
    /// Memory each linearizability search may take, in bytes; `None`: unlimited. Past
    /// it the verdict is unknown.
    pub memory: Option<usize>,
    /// Whether to render the HTML report.
    pub html: bool,
    /// The value a register, counter or inventory holds before the first operation,
    /// whichever of them the history's header declares or its operations imply
    /// (Knossos's `(cas-register 0)`); `None`: the model's own.
    pub initial: Option<i64>,
}

/// Everything the checkers found about one history.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The file.
    pub source: String,
    /// The worst verdict of all checks (violation > unknown > ok).
    pub verdict: Verdict,
    /// One report per check that ran.
    pub checks: Vec<CheckReport>,
    /// What else the checks found, outside the verdict (none without `command` events).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Remarks made while reading.
    pub warnings: Vec<String>,
    /// Data for the HTML report, not serialized.
    #[serde(skip)]
    pub html: Option<crate::html::Page>,
}

/// Runs the selected checks on a history.
pub fn check_history(history: &History, options: &Options) -> Result<Report, HistoryError> {
    let budget = Budget {
        deadline: options.timeout.map(|t| Instant::now() + t),
        max_bytes: options.memory.unwrap_or(usize::MAX),
    };
    let paired = pair(history)?;
    let mut checks = Vec::new();
    let mut html = None;
    let sel = &options.selection;
    let auto = *sel == Selection::Auto;
    let has = |f: fn(crate::format::OpKind) -> bool| paired.ops.iter().any(|o| f(o.kind));
    let lock_model = history.header.lock.unwrap_or_default();
    let has_lock_ops = has(|k| k.is_lock());
    // The overlap of critical sections is a claim about clients' beliefs; a history
    // read as Knossos's mutex records none unless it marks its sections itself.
    let sections_known = mutex::has_markers(&paired) || lock_model == LockModel::Lease;
    if (*sel == Selection::CriticalSections || (auto && sections_known)) && mutex::applies(&paired)
    {
        checks.push(mutex::check(&paired, history.header.reentrant));
    }
    let knossos = *sel == Selection::Mutex || (auto && lock_model == LockModel::Mutex);
    if knossos && has_lock_ops {
        let (report, page) = lock::check_mutex(history, &paired, options, &budget)?;
        checks.push(report);
        html = html.or(page);
    }
    let lease = *sel == Selection::Lock || (auto && lock_model == LockModel::Lease);
    if lease && has_lock_ops {
        let (report, page) = lock::check(history, &paired, options, &budget)?;
        checks.push(report);
        html = html.or(page);
        if foreign::applies(&paired) {
            checks.push(foreign::check(history, &paired));
        }
    }
    if let Selection::Resource(_) | Selection::Auto = sel {
        // A declared resource is checked even with no operations (an empty Jepsen log
        // is trivially linearizable).
        if has(|k| k.is_resource()) || history.header.resource.is_some() {
            let forced = match sel {
                Selection::Resource(m) => m.as_ref(),
                _ => None,
            };
            let (reports, page) = resource::check(history, &paired, forced, options, &budget)?;
            checks.extend(reports);
            html = html.or(page);
        }
    }
    if matches!(sel, Selection::Auto | Selection::Fencing) && fencing::applies(&paired) {
        checks.push(fencing::check(&paired));
    }
    let mut warnings = history.warnings.clone();
    if checks.is_empty() {
        // Nothing but nemesis events (or nothing at all): as Knossos says, a history
        // without client operations is trivially fine, under any model. Operations
        // the selected model does not fit are a usage error.
        if paired
            .ops
            .iter()
            .any(|o| o.kind.is_lock() || o.kind.is_resource())
        {
            return Err(HistoryError::at(
                &history.source,
                paired.ops.first().map_or(1, |o| o.line()),
                "nothing to check: the history has no operations of the selected model",
            ));
        }
        warnings.push(format!(
            "no client operations to check ({} nemesis or marker events): trivially valid",
            paired.points.len()
        ));
    }
    let verdict = checks
        .iter()
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Ok);
    // After the verdict's checks, with a time budget of its own: it never takes their
    // time, and they may have spent all of theirs.
    let finding_budget = Budget {
        deadline: options.timeout.map(|t| Instant::now() + t),
        ..budget
    };
    let findings: Vec<Finding> = if auto {
        crate::backend::findings(history, &paired, &finding_budget)
    } else {
        Vec::new()
    };
    Ok(Report {
        source: history.source.clone(),
        verdict,
        checks,
        findings,
        warnings,
        html,
    })
}
