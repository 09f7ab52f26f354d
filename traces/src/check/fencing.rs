//! Fencing: the resource only accepts writes whose token is at least every token it
//! accepted before, and no two holders share a token.
//!
//! Only orders the history proves are used: a write that completed before another was
//! invoked was accepted first. Concurrent writes may have been accepted in either order.
//! Each key is a resource of its own, fenced on its own (and often by a lock of its
//! own, whose tokens count from 1 like every other lock's).

use std::collections::BTreeMap;

use crate::ops::{Operation, Outcome, Paired};

use super::{op_ref, CheckReport, Property, Verdict};

/// Whether any accepted resource write carries a token.
pub fn applies(paired: &Paired) -> bool {
    paired
        .ops
        .iter()
        .any(|o| is_write(o) && o.outcome == Outcome::Ok && o.invoke.1.token.is_some())
}

fn is_write(op: &crate::ops::Operation) -> bool {
    op.kind.is_resource()
        && !matches!(
            op.kind,
            crate::format::OpKind::Read | crate::format::OpKind::Get
        )
}

/// Checks fencing.
pub fn check(paired: &Paired) -> CheckReport {
    let accepted: Vec<_> = paired
        .ops
        .iter()
        .filter(|o| is_write(o) && o.outcome == Outcome::Ok)
        .filter_map(|o| o.invoke.1.token.map(|t| (o, t)))
        .collect();
    let mut by_key: BTreeMap<Option<&str>, Vec<(&Operation, u64)>> = BTreeMap::new();
    for &(o, t) in &accepted {
        by_key.entry(o.key()).or_default().push((o, t));
    }
    let violation = by_key.values().find_map(|writes| first_violation(writes));
    let n = accepted.len();
    let Some((earlier, t, op, token, stale)) = violation else {
        return CheckReport::new(
            Property::Fencing,
            Verdict::Ok,
            format!("{n} fenced writes accepted in token order"),
        )
        .stat("fenced_writes", n);
    };
    let summary = if stale {
        format!(
            "stale token accepted: c{}'s write with token {token} was accepted after c{}'s write with token {t} had completed",
            op.process, earlier.process
        )
    } else {
        format!(
            "token {token} accepted from two holders: c{} and c{}",
            earlier.process, op.process
        )
    };
    let mut report =
        CheckReport::new(Property::Fencing, Verdict::Violation, summary).stat("fenced_writes", n);
    report.ops = vec![
        op_ref(earlier, format!("{} with token {t}", earlier.kind)),
        op_ref(op, format!("{} with token {token}", op.kind)),
    ];
    report.explanation.push(
        "a fenced resource must refuse a write whose token is lower than one it already accepted"
            .to_string(),
    );
    report
}

/// The first write to one resource accepted after a write with a higher token, or with
/// the same token from another holder, was: (the earlier write, its token, the write,
/// its token, whether stale rather than shared).
fn first_violation<'a>(
    accepted: &[(&'a Operation<'a>, u64)],
) -> Option<(&'a Operation<'a>, u64, &'a Operation<'a>, u64, bool)> {
    // The highest token among writes that surely completed before each write began:
    // sweep writes by invocation time against writes sorted by completion time.
    let mut by_ret: Vec<_> = accepted
        .iter()
        .filter_map(|(o, t)| o.ret().map(|r| (r, *t, *o)))
        .collect();
    by_ret.sort_by_key(|x| x.0);
    let mut by_call: Vec<_> = accepted.to_vec();
    by_call.sort_by_key(|(o, _)| o.call());
    let mut best: Option<(u64, &Operation)> = None;
    let mut k = 0;
    for (op, token) in by_call {
        while k < by_ret.len() && by_ret[k].0 < op.call() {
            if best.is_none_or(|(t, _)| by_ret[k].1 > t) {
                best = Some((by_ret[k].1, by_ret[k].2));
            }
            k += 1;
        }
        if let Some((t, earlier)) = best {
            let stale = token < t;
            let shared = token == t && earlier.owner() != op.owner();
            if stale || shared {
                return Some((earlier, t, op, token, stale));
            }
        }
    }
    None
}
