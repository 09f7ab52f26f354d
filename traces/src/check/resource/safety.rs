//! Resource safety: updates lost and units oversold, counted against the final read
//! where the model says what an update is.

use super::*;

/// Resource safety, only where the model says what an update is: in a
/// [`ResourceSpec::Counter`] each client's write that follows its own read is an update
/// of `written - read`; in an inventory every `decrement` sells `k` units, and so does a
/// write after a read when the header says `writes_are_updates`. If a final read
/// (invoked after every update completed) shows less change than the updates add up to,
/// updates were lost; an inventory that sold more units than it had is oversold. The
/// accounting only speaks when the history is such a workload throughout (every write
/// follows its own read, every update moves the same way, no update has an unknown
/// outcome); otherwise it reports nothing. In a plain register a write is just a write,
/// and nothing is inferred from it.
///
/// Each key is a resource of its own (a stock per product, a counter per name), so it
/// is accounted for on its own, as its linearizability is checked on its own; the worst
/// key speaks for the history.
pub(super) fn safety(paired: &Paired, model: &ResourceSpec) -> Option<CheckReport> {
    let mut by_key: BTreeMap<&str, Vec<&Operation>> = BTreeMap::new();
    for op in paired.ops.iter().filter(|o| o.kind.is_resource()) {
        by_key
            .entry(op.key().unwrap_or_default())
            .or_default()
            .push(op);
    }
    let several = by_key.len() > 1;
    by_key
        .into_iter()
        .filter_map(|(key, ops)| {
            let report = account(&ops, model)?;
            Some(match several {
                true => CheckReport {
                    summary: format!("key {key}: {}", report.summary),
                    ..report
                }
                .stat("key", key),
                false => report,
            })
        })
        .max_by_key(|r| r.verdict)
}

/// What one key's updates add up to: every acknowledged update's move, and the
/// evidence the report shows.
struct Tally<'o, 'h> {
    /// Acknowledged updates.
    updates: i64,
    /// Their moves, summed.
    delta: i64,
    /// Units sold (the downward moves, summed).
    sold: i64,
    /// The largest move of one update: past 1 (orders of several units), what is lost
    /// is counted in units, not in updates.
    largest: i64,
    /// When the last update returned: a final read is one called after it.
    last_update_done: u64,
    /// The updates, in order.
    update_ops: Vec<&'o Operation<'h>>,
    /// Each write with the value its read-modify-write started from.
    bases: Vec<(&'o Operation<'h>, i64)>,
}

/// The value a read returned; a counter never written reads as nil, and holds
/// `initial`.
fn read_value(op: &Operation, initial: i64) -> Option<i64> {
    match op.result_value() {
        Some(Value::Object(m)) => m.get("stock").and_then(Value::as_i64),
        None | Some(Value::Null) => Some(initial),
        Some(v) => v.as_i64(),
    }
}

/// Every update of `ops` and its move; `None` when the history is not a workload the
/// accounting can follow (a write that is no update, or does not follow its own read,
/// or an update of unknown outcome): say nothing rather than guess.
fn tally<'o, 'h>(
    ops: &[&'o Operation<'h>],
    initial: i64,
    writes_are_updates: bool,
) -> Option<Tally<'o, 'h>> {
    let mut t = Tally {
        updates: 0,
        delta: 0,
        sold: 0,
        largest: 0,
        last_update_done: 0,
        update_ops: Vec::new(),
        bases: Vec::new(),
    };
    let mut last_read: BTreeMap<u32, i64> = BTreeMap::new();
    for &op in ops {
        let d = match (op.kind, op.outcome) {
            (OpKind::Read, Outcome::Ok) => {
                if let Some(v) = read_value(op, initial) {
                    last_read.insert(op.process, v);
                }
                None
            }
            (OpKind::Decrement, Outcome::Ok) => Some(
                -op.invoke
                    .1
                    .value_json()
                    .as_ref()
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            ),
            // A write that is not declared an update (a restock, a reset) moves the
            // value by an amount the accounting cannot know.
            (OpKind::Write | OpKind::Cas, Outcome::Ok) if !writes_are_updates => return None,
            (OpKind::Write | OpKind::Cas, Outcome::Ok) => {
                let arg = op.invoke.1.value_json();
                let arg = arg.as_ref();
                let w = match op.kind {
                    OpKind::Cas => arg.and_then(|v| v.get("stock").or_else(|| v.get(1))),
                    _ => arg,
                }
                .and_then(Value::as_i64);
                let (w, r) = (w?, last_read.remove(&op.process)?);
                t.bases.push((op, r));
                Some(w - r)
            }
            (OpKind::Write | OpKind::Cas | OpKind::Decrement, Outcome::Unknown) => return None,
            _ => None,
        };
        if let Some(d) = d {
            t.updates += 1;
            t.delta += d;
            t.largest = t.largest.max(d.abs());
            if d < 0 {
                t.sold -= d;
            }
            t.update_ops.push(op);
            t.last_update_done = t.last_update_done.max(op.ret().unwrap_or(u64::MAX));
        }
    }
    Some(t)
}

/// Resource safety of one key's operations.
fn account(ops: &[&Operation], model: &ResourceSpec) -> Option<CheckReport> {
    let (initial, writes_are_updates) = match *model {
        ResourceSpec::Counter { initial } => (initial, true),
        ResourceSpec::Inventory {
            initial,
            writes_are_updates,
        } => (initial, writes_are_updates),
        ResourceSpec::Register { .. } | ResourceSpec::CasRegister { .. } | ResourceSpec::Kv => {
            return None
        }
    };
    let t = tally(ops, initial, writes_are_updates)?;
    let (updates, delta, sold) = (t.updates, t.delta, t.sold);
    // Lost updates are only countable when every update moves the value the same way.
    if updates == 0 || (sold > 0 && sold != -delta) {
        return None;
    }
    let final_read = ops
        .iter()
        .filter(|o| {
            o.kind == OpKind::Read && o.outcome == Outcome::Ok && o.call() > t.last_update_done
        })
        .filter_map(|o| read_value(o, initial))
        .next_back();
    let oversold = match model {
        ResourceSpec::Inventory { .. } => (sold - initial).max(0),
        _ => 0,
    };
    // The final read's move measured along the updates' direction: short of their sum,
    // updates were lost; past it (or the wrong way), the value moved by changes no
    // acknowledged update made — a write reported failed took effect, or a read saw one
    // that was undone. Either is impossible if every update took effect once.
    let (lost, phantom) = match final_read {
        Some(f) => {
            let along = (f - initial) * if delta < 0 { -1 } else { 1 };
            let lost = (delta.abs() - along).clamp(0, delta.abs());
            let phantom = (along - delta.abs()).max(0) + (-along).max(0);
            (Some(lost), phantom)
        }
        None => (None, 0),
    };
    let mut report = CheckReport::new(Property::ResourceSafety, Verdict::Ok, "");
    report = report
        .stat("updates", updates)
        .stat("initial", initial)
        .stat("expected_final", initial + delta)
        .stat("oversold", oversold);
    if let Some(f) = final_read {
        report = report.stat("final", f);
    }
    if let Some(l) = lost {
        report = report.stat("lost_updates", l);
    }
    if phantom > 0 {
        report = report.stat("unexplained_change", phantom);
    }
    let lost = lost.unwrap_or(0);
    if lost > 0 || oversold > 0 || phantom > 0 {
        let found = Found {
            lost,
            phantom,
            oversold,
            initial,
            final_read: final_read.unwrap_or_default(),
        };
        violation(&mut report, &found, &t, ops);
    } else {
        report.summary = match final_read {
            Some(f) => format!("{updates} updates, final value {f} as expected"),
            None => format!("{updates} updates; no final read to count lost updates against"),
        };
    }
    Some(report)
}

/// What the accounting found wrong with one key.
struct Found {
    lost: i64,
    phantom: i64,
    oversold: i64,
    initial: i64,
    final_read: i64,
}

/// Marks `report` a violation: what was lost, unexplained or oversold, and the
/// operations that show it.
fn violation(report: &mut CheckReport, f: &Found, t: &Tally, ops: &[&Operation]) {
    let (updates, initial, expected) = (t.updates, f.initial, f.initial + t.delta);
    report.verdict = Verdict::Violation;
    let mut parts = Vec::new();
    if f.lost > 0 {
        let what = if t.largest > 1 {
            "unit(s) of updates"
        } else {
            "update(s)"
        };
        parts.push(format!(
            "{} {what} lost: {updates} updates should have moved the value from {initial} to {expected}, the final read shows {}",
            f.lost, f.final_read
        ));
    }
    if f.phantom > 0 {
        parts.push(format!(
            "{} unit(s) of change no acknowledged update made: {updates} updates should have moved the value from {initial} to {expected}, the final read shows {} — a write reported failed took effect, or a client built on one that was undone",
            f.phantom, f.final_read
        ));
    }
    if f.oversold > 0 {
        parts.push(format!(
            "{} unit(s) oversold: {} sold from a stock of {initial}",
            f.oversold, t.sold
        ));
    }
    report.summary = parts.join("; ");
    // The evidence: accepted writes that started from the same value — each one after
    // the first overwrote an update it never saw.
    let mut by_base: BTreeMap<i64, Vec<&Operation>> = BTreeMap::new();
    for (op, r) in &t.bases {
        by_base.entry(*r).or_default().push(op);
    }
    let clash = by_base.iter().find(|(_, ops)| ops.len() > 1);
    let failed: Vec<&Operation> = ops
        .iter()
        .copied()
        // A refused compare-and-set is the protocol working, not a suspect.
        .filter(|o| matches!(o.kind, OpKind::Write | OpKind::Decrement))
        .filter(|o| o.outcome == Outcome::Fail)
        .collect();
    report.ops = match clash {
        None if f.phantom > 0 && !failed.is_empty() => {
            report.explanation.push(format!(
                "{} write(s) reported failed — certainly not applied, by their own account — yet the value moved past what the acknowledged ones add up to",
                failed.len()
            ));
            failed
                .iter()
                .take(8)
                .map(|o| {
                    op_ref(
                        o,
                        format!(
                            "{} {} reported failed",
                            o.kind,
                            shown(o.invoke.1.value_json().as_ref())
                        ),
                    )
                })
                .collect()
        }
        Some((base, ops)) => {
            report.explanation.push(format!(
                "{} accepted writes started from the same read of {base}: all but one update were lost",
                ops.len()
            ));
            ops.iter()
                .take(8)
                .map(|o| {
                    op_ref(
                        o,
                        // The line names the client already (`OpRef::process`).
                        format!(
                            "wrote {} over its read of {base}",
                            shown(o.invoke.1.value_json().as_ref())
                        ),
                    )
                })
                .collect()
        }
        None => t
            .update_ops
            .iter()
            .take(8)
            .map(|o| op_ref(o, o.kind.to_string()))
            .collect(),
    };
}
