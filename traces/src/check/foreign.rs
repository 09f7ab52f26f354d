//! No foreign release: a client never releases a lock it does not hold.
//!
//! Proven from the order of operations alone, with the lock read as one service: owner
//! A was granted the lock (G_A), A's lease had certainly run out (G_A returned more than
//! a lease before) when owner B's grant G_B began, G_B returned before A's release R
//! was sent, no acquire of A's can have taken effect between G_B and R, and R still
//! succeeded. B's grant proves A's hold was gone, so whatever R removed was not A's.
//! That counts the acquires A never heard the outcome of: a client that timed out on an
//! acquire and releases to be safe may well hold the lock. A grant that overlaps a live
//! lease (a double grant) proves nothing here: that is mutual exclusion's and the lock
//! spec's finding.

use crate::format::OpKind;
use crate::ops::{Operation, Outcome, Paired};

use super::{fmt_time, op_ref, CheckReport, Property, Verdict};

/// Whether the history has successful releases to judge.
pub fn applies(paired: &Paired) -> bool {
    paired
        .ops
        .iter()
        .any(|o| o.kind == OpKind::Release && o.outcome == Outcome::Ok)
}

fn lease_ns(op: &Operation) -> Option<u64> {
    op.invoke.1.lease_ns
}

/// Runs the check.
pub fn check(paired: &Paired) -> CheckReport {
    let grants: Vec<&Operation> = paired
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Acquire && o.outcome == Outcome::Ok)
        .collect();
    let mut releases = 0usize;
    for r in paired
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Release && o.outcome == Outcome::Ok)
    {
        releases += 1;
        let a = r.owner();
        // A's own latest grant that certainly came before R, and no grant of A's whose
        // order against R is unclear (it could be what R released).
        let Some(ga) = grants
            .iter()
            .filter(|g| g.owner() == a && g.key() == r.key())
            .filter(|g| g.ret().is_some_and(|t| t < r.call()))
            .max_by_key(|g| g.ret())
        else {
            continue;
        };
        let (Some(ga_ret), Some(lease)) = (ga.ret(), lease_ns(ga)) else {
            continue;
        };
        let expired_by = ga_ret.saturating_add(lease);
        // The latest such grant leaves the least room for A to be granted again after it.
        let other = grants
            .iter()
            .filter(|g| {
                g.owner() != a
                    && g.key() == r.key()
                    && g.call() > expired_by
                    && g.ret().is_some_and(|t| t < r.call())
            })
            .max_by_key(|g| g.call());
        // An acquire of A's that may have taken effect after G_B and before R, whether
        // A heard of it or not (a lost answer, another process of the same owner), may be
        // the hold R released.
        let regranted = |gb: &Operation| {
            paired.ops.iter().any(|g| {
                g.kind == OpKind::Acquire
                    && g.outcome != Outcome::Fail
                    && g.owner() == a
                    && g.key() == r.key()
                    && g.call() < r.ret().unwrap_or(u64::MAX)
                    && g.ret().unwrap_or(u64::MAX) > gb.call()
            })
        };
        if let Some(gb) = other.filter(|gb| !regranted(gb)) {
            let mut report = CheckReport::new(
                Property::NoForeignRelease,
                Verdict::Violation,
                format!(
                    "c{} released a lock it no longer held: its lease ran out by {}, c{} was granted the lock at {}, and c{}'s release at {} still succeeded",
                    r.process,
                    fmt_time(expired_by),
                    gb.process,
                    fmt_time(gb.ret().unwrap_or_default()),
                    r.process,
                    fmt_time(r.call()),
                ),
            );
            report.ops = vec![
                op_ref(
                    ga,
                    format!("grant to c{} (lease {} ms)", ga.process, lease / 1_000_000),
                ),
                op_ref(gb, format!("grant to c{}", gb.process)),
                op_ref(r, format!("release by c{} succeeded", r.process)),
            ];
            return report.stat("releases", releases);
        }
    }
    CheckReport::new(
        Property::NoForeignRelease,
        Verdict::Ok,
        format!("{releases} successful releases, none proven to remove another client's lock"),
    )
    .stat("releases", releases)
}
