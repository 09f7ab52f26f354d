//! The run tests' reading of a checked history.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use locklab_jepsen::RunReport;
use locklab_traces::check::{CheckReport, Property, Verdict};
use locklab_traces::format::{History, OpKind};

/// The history's `property` check; a missing check fails the test.
pub fn check_of(report: &RunReport, property: Property) -> &CheckReport {
    report
        .report
        .checks
        .iter()
        .find(|c| c.property == property)
        .unwrap_or_else(|| panic!("{}: no {property:?} check", report.id))
}

/// The verdict of the history's `property` check; a missing check fails the test.
pub fn check(report: &RunReport, property: Property) -> Verdict {
    check_of(report, property).verdict
}

/// The nemesis's `fault` steps in `h`, in order: each one's target, its note (why it
/// failed or was skipped; none when it was done), and when it was logged (ns, once
/// done).
pub fn nemesis(h: &History, fault: &str) -> Vec<(String, Option<String>, u64)> {
    h.events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Nemesis)
        .filter_map(|(_, e)| {
            let v = e.value_json()?;
            let target = v.get("target")?.as_str()?.to_string();
            (v.get("fault")?.as_str()? == fault).then(|| (target, e.note.clone(), e.time))
        })
        .collect()
}
