//! No foreign release: a client never releases a lock it does not hold.
//!
//! Proven from the order of operations alone, with the lock read as one service: owner
//! A was granted the lock (G_A), A's lease had certainly run out (G_A returned more than
//! a lease before) when owner B's grant G_B began, G_B returned before A's release R
//! was sent, A took no grant in between, and R still succeeded. B's grant proves A's
//! hold was gone, so whatever R removed was not A's. A grant that overlaps a live lease
//! (a double grant) proves nothing here: that is mutual exclusion's and the lock spec's
//! finding.

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
        // Anything else of A's that may have granted or extended A's hold before R took
        // effect leaves no proof: an acquire or renewal with an unknown outcome (it may
        // take effect any time after its call), or one that overlaps R (another process
        // of the same owner). A renewal that surely came before R extends the lease.
        let of_a = |o: &&Operation| {
            o.owner() == a
                && o.key() == r.key()
                && matches!(o.kind, OpKind::Acquire | OpKind::Renew)
                && o.line() != ga.line()
                && o.call() < r.ret().unwrap_or(u64::MAX)
        };
        let mut expired_by = ga_ret.saturating_add(lease);
        let mut unclear = false;
        for o in paired.ops.iter().filter(of_a) {
            match (o.outcome, o.ret()) {
                (Outcome::Fail, _) => {}
                (Outcome::Ok, Some(ret)) if ret < r.call() && o.kind == OpKind::Renew => {
                    match lease_ns(o) {
                        Some(l) => expired_by = expired_by.max(ret.saturating_add(l)),
                        None => unclear = true,
                    }
                }
                // A's earlier grants are older than `ga`, the latest one.
                (Outcome::Ok, Some(ret)) if ret < ga.call() => {}
                _ => unclear = true,
            }
        }
        if unclear {
            continue;
        }
        let other = grants.iter().find(|g| {
            g.owner() != a
                && g.key() == r.key()
                && g.call() > expired_by
                && g.ret().is_some_and(|t| t < r.call())
        });
        if let Some(gb) = other {
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
