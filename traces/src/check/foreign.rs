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
//!
//! Where the lock operations prove nothing, the history's `command` events may, in its
//! backend's words ([`crate::backend::foreign_release`]): a Redis `DEL` that removed a
//! lock granted to another client while the release was under way; an etcd delete by
//! name, retried after a lost reply, of a key another client created; a ZooKeeper
//! `delete` of a node another client created.

use std::collections::HashMap;

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
    op.lease_ns()
}

/// The acquires and renewals of one owner on one key that may have taken effect
/// (refusals left out), by invocation time, with the latest completion among each
/// prefix (an unknown outcome counts as never completing).
struct OwnerOps<'a> {
    ops: Vec<&'a Operation<'a>>,
    latest_ret: Vec<u64>,
}

fn ends(op: &Operation) -> u64 {
    op.ret().unwrap_or(u64::MAX)
}

/// Runs the check. A proof from the servers' commands (what the client sent, heard on
/// the wire) comes first: it rests on no client's word. A proof from the lock
/// operations alone rests on the client's report of its release; where both exist, the
/// second is added to the first's explanation.
pub fn check(history: &crate::format::History, paired: &Paired) -> CheckReport {
    let (from_ops, releases) = from_lock_ops(paired);
    let proven = crate::backend::foreign_release(history, paired);
    match (proven, from_ops) {
        (Some(mut report), ops) => {
            if let Some(ops) = ops {
                report
                    .explanation
                    .push(format!("the lock operations show it too: {}", ops.summary));
            }
            report.stat("releases", releases)
        }
        (None, Some(report)) => report.stat("releases", releases),
        (None, None) => CheckReport::new(
            Property::NoForeignRelease,
            Verdict::Ok,
            format!("{releases} successful releases, none proven to remove another client's lock"),
        )
        .stat("releases", releases),
    }
}

/// The proof from the lock operations, if any, and how many releases succeeded.
fn from_lock_ops(paired: &Paired) -> (Option<CheckReport>, usize) {
    let mut grants: HashMap<Option<&str>, Vec<&Operation>> = HashMap::new();
    let mut owners: HashMap<(u64, Option<&str>), OwnerOps<'_>> = HashMap::new();
    for o in &paired.ops {
        if o.outcome == Outcome::Fail || !matches!(o.kind, OpKind::Acquire | OpKind::Renew) {
            continue;
        }
        if o.kind == OpKind::Acquire && o.outcome == Outcome::Ok {
            grants.entry(o.key()).or_default().push(o);
        }
        owners
            .entry((o.owner(), o.key()))
            .or_insert_with(|| OwnerOps {
                ops: Vec::new(),
                latest_ret: Vec::new(),
            })
            .ops
            .push(o);
    }
    for list in grants.values_mut() {
        list.sort_by_key(|o| o.call());
    }
    for own in owners.values_mut() {
        own.ops.sort_by_key(|o| o.call());
        let mut latest = 0;
        own.latest_ret = own
            .ops
            .iter()
            .map(|o| {
                latest = latest.max(ends(o));
                latest
            })
            .collect();
    }
    let mut releases = 0usize;
    for r in paired
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Release && o.outcome == Outcome::Ok)
    {
        releases += 1;
        let a = r.owner();
        let Some(own) = owners.get(&(a, r.key())) else {
            continue;
        };
        // A's latest grant that certainly came before R (`ga`); after it, only renewals
        // that surely came before R (they extend the lease). Anything else of A's that
        // may have granted or extended A's hold before R took effect leaves no proof:
        // an acquire or renewal with an unknown outcome (it may take effect any time
        // after its call), or one that overlaps R or `ga` (another process of the same
        // owner).
        let end = own.ops.partition_point(|o| o.call() < ends(r));
        let mut renewed_until = 0u64;
        let mut found = None;
        for j in (0..end).rev() {
            let o = own.ops[j];
            match (o.kind, o.outcome, o.ret()) {
                (OpKind::Acquire, Outcome::Ok, Some(ret)) if ret < r.call() => {
                    found = Some(j);
                    break;
                }
                (OpKind::Renew, Outcome::Ok, Some(ret)) if ret < r.call() => match lease_ns(o) {
                    Some(l) => renewed_until = renewed_until.max(ret.saturating_add(l)),
                    None => break,
                },
                _ => break,
            }
        }
        let Some(j) = found else { continue };
        let ga = own.ops[j];
        if j > 0 && own.latest_ret[j - 1] >= ga.call() {
            continue;
        }
        let (Some(ga_ret), Some(lease)) = (ga.ret(), lease_ns(ga)) else {
            continue;
        };
        let expired_by = ga_ret.saturating_add(lease).max(renewed_until);
        let others = grants.get(&r.key()).map_or(&[][..], Vec::as_slice);
        let from = others.partition_point(|g| g.call() <= expired_by);
        let other = others[from..]
            .iter()
            .take_while(|g| g.call() < r.call())
            .find(|g| g.owner() != a && g.ret().is_some_and(|t| t < r.call()));
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
            return (Some(report), releases);
        }
    }
    (None, releases)
}
