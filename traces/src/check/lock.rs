//! Lock linearizability: the acquire/release/renew operations of a history are a
//! behaviour of the owner-aware, lease-aware, fenced [`LockSpec`].

use std::collections::BTreeMap;
use std::sync::Arc;

use locklab_models::spec::{
    LockInput, LockOutput, LockSpec, LockState, MutexInput, MutexOutput, MutexSpec, Spec,
};

use crate::error::HistoryError;
use crate::format::{History, OpKind};
use crate::html::Page;
use crate::ops::{Operation, Outcome, Paired};

use super::linear::{self, Budget, Illegal, LinOp, LinResult};
use super::{fmt_time, op_ref, CheckReport, Options, Property, Verdict};

/// Turns one paired lock operation into a checker operation.
pub fn lin_op(
    spec: &Arc<LockSpec>,
    op: &Operation,
    source: &str,
) -> Result<LinOp<LockSpec>, HistoryError> {
    let owner = op.owner();
    let lease = op.lease_ns();
    let input = match op.kind {
        OpKind::Acquire => LockInput::Acquire { owner, lease },
        OpKind::Release => LockInput::Release { owner },
        OpKind::Renew => LockInput::Renew {
            owner,
            lease: lease.ok_or_else(|| {
                HistoryError::at(
                    source,
                    op.line(),
                    "renew needs \"lease_ns\" on its invocation",
                )
            })?,
        },
        other => {
            return Err(HistoryError::at(
                source,
                op.line(),
                format!("{other} is not a lock operation"),
            ))
        }
    };
    let output = match (op.kind, op.outcome) {
        (_, Outcome::Unknown) => None,
        (OpKind::Acquire, Outcome::Ok) => Some(LockOutput::Granted(op.token())),
        (OpKind::Acquire, Outcome::Fail) => Some(LockOutput::Busy),
        (OpKind::Release, Outcome::Ok) => Some(LockOutput::Released),
        (OpKind::Renew, Outcome::Ok) => Some(LockOutput::Renewed),
        (_, Outcome::Ok) => None,
        (_, Outcome::Fail) => Some(LockOutput::NotHeld),
    };
    Ok(LinOp {
        spec: spec.clone(),
        input,
        output,
        call: op.call(),
        ret: op.ret(),
        client: op.process,
        line: op.line(),
    })
}

/// Checks the lock operations, one partition per lock key.
pub fn check(
    history: &History,
    paired: &Paired,
    options: &Options,
    budget: &Budget,
) -> Result<(CheckReport, Option<Page>), HistoryError> {
    let spec = Arc::new(LockSpec {
        reentrant: history.header.reentrant,
        late_expiry: history.header.late_expiry,
        spurious_refusals: history.header.spurious_refusals,
    });
    let mut by_key: BTreeMap<String, Vec<LinOp<LockSpec>>> = BTreeMap::new();
    let mut count = 0usize;
    for op in paired.ops.iter().filter(|o| o.kind.is_lock()) {
        count += 1;
        by_key
            .entry(op.key().unwrap_or_default().to_string())
            .or_default()
            .push(lin_op(&spec, op, &history.source)?);
    }
    let partitions: Vec<Vec<LinOp<LockSpec>>> = by_key.into_values().collect();
    let locks = partitions.len();
    let page = |partitions: &[Vec<LinOp<LockSpec>>]| {
        options
            .html
            .then(|| Page::render(linear::info(partitions), paired, history.header.reentrant))
    };
    // Refused tries are most of a busy lock's history: the own search commits them
    // where porcupine-rs would branch on their order.
    let report = match linear::decide(&partitions, budget) {
        LinResult::Ok => (
            CheckReport::new(
                Property::LockLinearizability,
                Verdict::Ok,
                format!(
                    "{count} lock operations on {locks} lock(s) are a behaviour of the lock spec"
                ),
            )
            .stat("operations", count),
            page(&partitions),
        ),
        LinResult::Unknown(why) => (
            CheckReport::new(
                Property::LockLinearizability,
                Verdict::Unknown,
                LinResult::<LockSpec>::why_unknown(why),
            )
            .stat("operations", count),
            None,
        ),
        LinResult::Illegal(ill) => {
            let report = explain(&ill, paired).stat("operations", count);
            // Only the report needs porcupine-rs's own partial linearizations, so only
            // it pays for the search that collects them.
            let page = (options.html && ill.order_known).then(|| {
                Page::render(
                    linear::info(std::slice::from_ref(&ill.ops)),
                    paired,
                    history.header.reentrant,
                )
            });
            (report, page)
        }
    };
    Ok(report)
}

/// Checks the acquire/release operations against Knossos's mutex, one partition per
/// lock key. As in Knossos, a `fail` did not happen and constrains nothing; an `info`
/// (or no completion) may take effect at any time after its invocation.
pub fn check_mutex(
    history: &History,
    paired: &Paired,
    options: &Options,
    budget: &Budget,
) -> Result<(CheckReport, Option<Page>), HistoryError> {
    let spec = Arc::new(MutexSpec);
    let mut by_key: BTreeMap<String, Vec<LinOp<MutexSpec>>> = BTreeMap::new();
    let mut count = 0usize;
    for op in paired.ops.iter().filter(|o| o.kind.is_lock()) {
        let input = match op.kind {
            OpKind::Acquire => MutexInput::Acquire,
            OpKind::Release => MutexInput::Release,
            other => {
                return Err(HistoryError::at(
                    &history.source,
                    op.line(),
                    format!("{other} is not an operation of Knossos's mutex (acquire, release)"),
                ))
            }
        };
        let output = match op.outcome {
            Outcome::Fail => continue,
            Outcome::Ok => Some(MutexOutput::Done),
            Outcome::Unknown => None,
        };
        count += 1;
        by_key
            .entry(op.key().unwrap_or_default().to_string())
            .or_default()
            .push(LinOp {
                spec: spec.clone(),
                input,
                output,
                call: op.call(),
                ret: op.ret(),
                client: op.process,
                line: op.line(),
            });
    }
    let partitions: Vec<Vec<LinOp<MutexSpec>>> = by_key.into_values().collect();
    let reentrant = history.header.reentrant;
    let report = match linear::check(&partitions, budget) {
        LinResult::Ok => {
            let page = options
                .html
                .then(|| Page::render(linear::info(&partitions), paired, reentrant));
            (
                CheckReport::new(
                    Property::LockLinearizability,
                    Verdict::Ok,
                    format!("{count} acquire/release operations linearize as Knossos's mutex"),
                )
                .stat("operations", count)
                .stat("model", "mutex"),
                page,
            )
        }
        LinResult::Unknown(why) => (
            CheckReport::new(
                Property::LockLinearizability,
                Verdict::Unknown,
                LinResult::<MutexSpec>::why_unknown(why),
            )
            .stat("operations", count)
            .stat("model", "mutex"),
            None,
        ),
        LinResult::Illegal(ill) => {
            let stuck = ill.stuck.first().map(|&i| &ill.ops[i]);
            let held = ill.states_after.iter().any(|h| *h);
            let summary = match stuck {
                Some(op) if op.input == MutexInput::Acquire => format!(
                    "not linearizable as Knossos's mutex: c{} acquired (line {}) while the mutex was held",
                    op.client, op.line
                ),
                Some(op) => format!(
                    "not linearizable as Knossos's mutex: c{} released (line {}) a mutex that was {}",
                    op.client,
                    op.line,
                    if held { "held" } else { "free" }
                ),
                None => "not linearizable as Knossos's mutex".to_string(),
            };
            let mut report =
                CheckReport::new(Property::LockLinearizability, Verdict::Violation, summary)
                    .stat("operations", count)
                    .stat("model", "mutex");
            report.explanation.push(format!(
                "the longest order Knossos's mutex accepts has {} of {} operations:",
                ill.longest.len(),
                ill.ops.len()
            ));
            let shown = ill.longest.len().saturating_sub(6);
            for &i in &ill.longest[shown..] {
                report
                    .explanation
                    .push(format!("  {}", ill.ops[i].describe()));
            }
            tell_stuck(&ill, paired, &mut report);
            let page = (options.html && ill.order_known).then(|| {
                Page::render(
                    linear::info(std::slice::from_ref(&ill.ops)),
                    paired,
                    reentrant,
                )
            });
            (report, page)
        }
    };
    Ok(report)
}

fn holder_text(state: &LockState) -> String {
    match &state.holder {
        None => "free".to_string(),
        Some(h) => {
            let lease = match h.deadline {
                None => "no lease".to_string(),
                Some(d) if d.lo == d.hi => format!("lease until {}", fmt_time(d.lo)),
                Some(d) => format!(
                    "lease until between {} and {}",
                    fmt_time(d.lo),
                    fmt_time(d.hi)
                ),
            };
            format!("held by owner {} (token {}, {lease})", h.owner, h.token)
        }
    }
}

/// Whether `owner`'s hold at the end of the longest order rests on a grant that surely
/// happened (its acquire answered "granted"), not on one whose outcome is unknown.
fn certainly_granted(ill: &Illegal<LockSpec>, owner: u64) -> bool {
    ill.longest
        .iter()
        .rev()
        .map(|&i| &ill.ops[i])
        .find(|o| matches!(o.input, LockInput::Acquire { .. }) && o.input.owner() == owner)
        .is_some_and(|o| matches!(o.output, Some(LockOutput::Granted(_))))
}

/// Why the stuck operation cannot happen, in the lock's words. A holder is named only
/// when its grant surely happened: an acquire of unknown outcome may have taken effect
/// in the order the search got furthest with, but naming its client as "the holder"
/// would tell the reader something the history does not show.
fn reason(op: &LinOp<LockSpec>, ill: &Illegal<LockSpec>) -> String {
    let states = &ill.states_after;
    let owner = op.input.owner();
    // Only a lease that may still run at the operation's time explains a refusal.
    let live: Vec<_> = states
        .iter()
        .filter_map(|s| s.holder.as_ref())
        .filter(|h| h.maybe_live(op.window()) && h.owner != owner)
        .collect();
    let certain = live.iter().find(|h| certainly_granted(ill, h.owner));
    let possible = !live.is_empty() && certain.is_none();
    let other = |what: &str| {
        match certain {
        Some(h) => format!("while owner {} held it", h.owner),
        None => format!(
            "while every order of the operations that gets this far has the lock held {what} (by a grant whose outcome is unknown, or by none the history shows)"
        ),
    }
    };
    match (&op.input, &op.output) {
        (LockInput::Acquire { .. }, Some(LockOutput::Granted(_))) if certain.is_some() || possible => {
            format!("double grant: c{} was granted the lock {}", op.client, other("by another"))
        }
        (LockInput::Acquire { .. }, Some(LockOutput::Granted(Some(t)))) => format!(
            "token {t} is not larger than the last token granted ({}): fencing tokens must increase with every grant",
            states.iter().map(|s| s.last_token).max().unwrap_or(0)
        ),
        (LockInput::Release { .. }, Some(LockOutput::Released)) if certain.is_some() || possible => format!(
            "release by a non-owner: c{} (owner {owner}) released the lock {}",
            op.client,
            other("by another")
        ),
        (LockInput::Release { .. }, Some(LockOutput::Released)) => format!(
            "c{} (owner {owner}) released a lock that nobody held (its lease had run out)",
            op.client
        ),
        (LockInput::Renew { .. }, Some(LockOutput::Renewed)) => format!(
            "c{} (owner {owner}) renewed a lease it did not hold",
            op.client
        ),
        (LockInput::Acquire { .. }, Some(LockOutput::Busy))
            if !states
                .iter()
                .filter_map(|s| s.holder.as_ref())
                .any(|h| h.maybe_live(op.window())) =>
        {
            format!("c{} was told the lock was busy while it was free", op.client)
        }
        (LockInput::Release { .. } | LockInput::Renew { .. }, Some(LockOutput::NotHeld))
            if states.iter().all(|s| {
                s.holder
                    .as_ref()
                    .is_some_and(|h| h.owner == owner && !h.maybe_expired(op.window()))
            }) =>
        {
            format!(
                "c{} (owner {owner}) was told it did not hold the lock while its own grant's lease still ran",
                op.client
            )
        }
        _ => "its answer contradicts every state the lock can be in".to_string(),
    }
}

fn explain(ill: &Illegal<LockSpec>, paired: &Paired) -> CheckReport {
    let first = ill.stuck.first().map(|&i| &ill.ops[i]);
    let summary = match first {
        Some(op) => reason(op, ill),
        None => "no order of the lock operations is a behaviour of the lock spec".to_string(),
    };
    let mut report = CheckReport::new(Property::LockLinearizability, Verdict::Violation, summary);
    if !ill.order_known {
        report.explanation.push(format!(
            "checked as a stream, no state the {} operations allow before it meets this answer; the search for their longest order ran out of budget",
            ill.ops.len()
        ));
        tell_stuck(ill, paired, &mut report);
        return report;
    }
    report.explanation.push(format!(
        "the longest order of lock operations that the lock spec accepts has {} of {} operations:",
        ill.longest.len(),
        ill.ops.len()
    ));
    let shown = ill.longest.len().saturating_sub(6);
    if shown > 0 {
        report
            .explanation
            .push(format!("  … {shown} earlier operations"));
    }
    for &i in &ill.longest[shown..] {
        report
            .explanation
            .push(format!("  {}", ill.ops[i].describe()));
    }
    let states: Vec<String> = ill.states_after.iter().map(holder_text).collect();
    report
        .explanation
        .push(format!("after them the lock is {}", super::one_of(&states)));
    tell_stuck(ill, paired, &mut report);
    report
}

/// Tells, for either lock model, each operation that cannot come after the longest
/// valid order, and names it among the report's operations.
fn tell_stuck<S: Spec>(ill: &Illegal<S>, paired: &Paired, report: &mut CheckReport) {
    for &i in &ill.stuck {
        let op = &ill.ops[i];
        report.explanation.push(format!(
            "then {} [{} – {}] cannot happen",
            op.describe(),
            fmt_time(op.call),
            op.ret.map_or("never returned".to_string(), fmt_time)
        ));
        if let Some(p) = paired.ops.iter().find(|p| p.line() == op.line) {
            report
                .ops
                .push(op_ref(p, S::describe(&op.input, op.output.as_ref())));
        }
    }
}
