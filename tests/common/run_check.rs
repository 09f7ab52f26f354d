//! The run tests' reading of a checked history.

use locklab_jepsen::RunReport;
use locklab_traces::check::{Property, Verdict};

/// The verdict of the history's `property` check; a missing check fails the test.
pub fn check(report: &RunReport, property: Property) -> Verdict {
    report
        .report
        .checks
        .iter()
        .find(|c| c.property == property)
        .map_or_else(
            || panic!("{}: no {property:?} check", report.id),
            |c| c.verdict,
        )
}
