//! Resource linearizability (register, cas-register, kv, inventory) and resource safety
//! (lost updates, oversold units) of the protected resource.

use std::collections::BTreeMap;
use std::sync::Arc;

use locklab_models::spec::{
    InventoryInput, InventoryOutput, InventorySpec, KvInput, KvOutput, KvSpec, RegisterInput,
    RegisterOutput, RegisterSpec, Spec,
};
use serde_json::Value;

use crate::error::HistoryError;
use crate::format::{History, OpKind, ResourceSpec};
use crate::html::Page;
use crate::ops::{Operation, Outcome, Paired};

use super::linear::{self, Budget, Illegal, LinOp, LinResult};
use super::{fmt_time, op_ref, CheckReport, Options, Property, Verdict};

/// The resource model a history's operations follow: the header's, or the one its
/// operations imply (kv for `get`/`put`/`append`, cas-register when there is a `cas`,
/// else a register), never one that claims more than the operations show: a counter or
/// an inventory whose writes are updates must be declared.
pub fn infer(history: &History, paired: &Paired) -> Result<ResourceSpec, HistoryError> {
    if let Some(r) = &history.header.resource {
        return Ok(r.clone());
    }
    let has = |k: OpKind| paired.ops.iter().any(|o| o.kind == k);
    if has(OpKind::Get) || has(OpKind::Put) || has(OpKind::Append) {
        Ok(ResourceSpec::Kv)
    } else if let Some(op) = paired.ops.iter().find(|o| o.kind == OpKind::Decrement) {
        Err(HistoryError::at(
            &history.source,
            op.line(),
            "decrement needs an inventory resource: put {\"resource\":{\"kind\":\"inventory\",\"initial\":N}} in the header",
        ))
    } else if has(OpKind::Cas) {
        Ok(ResourceSpec::CasRegister { initial: None })
    } else {
        Ok(ResourceSpec::Register { initial: None })
    }
}

/// The model starting from `initial` instead of its own initial value, where it has one.
pub fn with_initial(model: ResourceSpec, initial: Option<i64>) -> ResourceSpec {
    let Some(v) = initial else {
        return model;
    };
    match model {
        ResourceSpec::Register { .. } => ResourceSpec::Register { initial: Some(v) },
        ResourceSpec::CasRegister { .. } => ResourceSpec::CasRegister { initial: Some(v) },
        ResourceSpec::Counter { .. } => ResourceSpec::Counter { initial: v },
        ResourceSpec::Inventory {
            writes_are_updates, ..
        } => ResourceSpec::Inventory {
            initial: v,
            writes_are_updates,
        },
        ResourceSpec::Kv => ResourceSpec::Kv,
    }
}

/// The model's name, as `--model` and the header spell it.
pub fn name(model: &ResourceSpec) -> &'static str {
    match model {
        ResourceSpec::Register { .. } => "register",
        ResourceSpec::CasRegister { .. } => "cas-register",
        ResourceSpec::Counter { .. } => "counter",
        ResourceSpec::Kv => "kv",
        ResourceSpec::Inventory { .. } => "inventory",
    }
}

fn int(v: Option<&Value>, source: &str, line: usize, what: &str) -> Result<i64, HistoryError> {
    v.and_then(Value::as_i64).ok_or_else(|| {
        HistoryError::at(
            source,
            line,
            format!("{what} needs an integer \"value\", got {}", shown(v)),
        )
    })
}

fn shown(v: Option<&Value>) -> String {
    v.map_or("nothing".to_string(), |v| v.to_string())
}

fn text(v: Option<&Value>, source: &str, line: usize, what: &str) -> Result<String, HistoryError> {
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None if what == "get" => Ok(String::new()),
        other => Err(HistoryError::at(
            source,
            line,
            format!("{what} needs a string \"value\", got {}", shown(other)),
        )),
    }
}

fn wrong(op: &Operation, model: &ResourceSpec, source: &str) -> HistoryError {
    HistoryError::at(
        source,
        op.line(),
        format!(
            "{:?} is not an operation of the {} resource model",
            op.kind,
            name(model)
        ),
    )
}

fn lin<S: Spec>(
    spec: &Arc<S>,
    op: &Operation,
    input: S::Input,
    output: Option<S::Output>,
) -> LinOp<S> {
    LinOp {
        spec: spec.clone(),
        input,
        output: if op.outcome == Outcome::Unknown {
            None
        } else {
            output
        },
        call: op.call(),
        ret: op.ret(),
        client: op.process,
        line: op.line(),
    }
}

fn register_op(
    spec: &Arc<RegisterSpec>,
    op: &Operation,
    model: &ResourceSpec,
    src: &str,
) -> Result<LinOp<RegisterSpec>, HistoryError> {
    let line = op.line();
    let arg = op.invoke.1.value.as_ref();
    Ok(match op.kind {
        // What an operation of unknown outcome returned (`:timed-out`) says nothing.
        OpKind::Read if op.outcome == Outcome::Unknown => lin(spec, op, RegisterInput::Read, None),
        OpKind::Read => {
            let out = match (op.result_value(), model) {
                // A counter that was never written holds its initial value.
                (None | Some(Value::Null), ResourceSpec::Counter { initial }) => {
                    RegisterOutput::Value(Some(*initial))
                }
                (None | Some(Value::Null), _) => RegisterOutput::Value(None),
                (v, _) => RegisterOutput::Value(Some(int(v, src, line, "read")?)),
            };
            lin(spec, op, RegisterInput::Read, Some(out))
        }
        OpKind::Write => lin(
            spec,
            op,
            RegisterInput::Write(int(arg, src, line, "write")?),
            Some(RegisterOutput::Written),
        ),
        OpKind::Cas if matches!(model, ResourceSpec::CasRegister { .. }) => {
            let pair = arg.and_then(Value::as_array).filter(|a| a.len() == 2);
            let (from, to) = match pair.map(|a| (a[0].as_i64(), a[1].as_i64())) {
                Some((Some(f), Some(t))) => (f, t),
                _ => {
                    return Err(HistoryError::at(
                        src,
                        line,
                        format!("cas needs \"value\": [from, to], got {}", shown(arg)),
                    ))
                }
            };
            let out = if op.outcome == Outcome::Ok {
                RegisterOutput::CasOk
            } else {
                RegisterOutput::CasFailed
            };
            lin(spec, op, RegisterInput::Cas { from, to }, Some(out))
        }
        _ => return Err(wrong(op, model, src)),
    })
}

fn kv_op(spec: &Arc<KvSpec>, op: &Operation, src: &str) -> Result<LinOp<KvSpec>, HistoryError> {
    let line = op.line();
    let key = op
        .key()
        .ok_or_else(|| HistoryError::at(src, line, format!("{:?} needs a \"key\"", op.kind)))?
        .to_string();
    let arg = op.invoke.1.value.as_ref();
    Ok(match op.kind {
        OpKind::Get if op.outcome == Outcome::Unknown => lin(spec, op, KvInput::Get(key), None),
        OpKind::Get => {
            let v = text(op.result_value(), src, line, "get")?;
            lin(spec, op, KvInput::Get(key), Some(KvOutput::Value(v)))
        }
        OpKind::Put => lin(
            spec,
            op,
            KvInput::Put(key, text(arg, src, line, "put")?),
            Some(KvOutput::Done),
        ),
        OpKind::Append => lin(
            spec,
            op,
            KvInput::Append(key, text(arg, src, line, "append")?),
            Some(KvOutput::Done),
        ),
        _ => return Err(wrong(op, &ResourceSpec::Kv, src)),
    })
}

fn inventory_op(
    spec: &Arc<InventorySpec>,
    op: &Operation,
    model: &ResourceSpec,
    src: &str,
) -> Result<LinOp<InventorySpec>, HistoryError> {
    let line = op.line();
    let arg = op.invoke.1.value.as_ref();
    let done = if op.outcome == Outcome::Ok {
        InventoryOutput::Done
    } else {
        InventoryOutput::Refused
    };
    Ok(match op.kind {
        // A read that crashed or never returned has no value to parse, and needs none:
        // its answer is unknown.
        OpKind::Read if op.outcome == Outcome::Unknown => lin(spec, op, InventoryInput::Read, None),
        OpKind::Read => {
            let out = match op.result_value() {
                Some(Value::Object(m)) => InventoryOutput::Read {
                    stock: int(m.get("stock"), src, line, "read's stock")?,
                    version: m.get("version").and_then(Value::as_u64),
                },
                v => InventoryOutput::Read {
                    stock: int(v, src, line, "read")?,
                    version: None,
                },
            };
            lin(spec, op, InventoryInput::Read, Some(out))
        }
        OpKind::Write => lin(
            spec,
            op,
            InventoryInput::Write(int(arg, src, line, "write")?),
            Some(done),
        ),
        OpKind::Decrement => {
            let k = match arg {
                None => 1,
                v => int(v, src, line, "decrement")?,
            };
            lin(spec, op, InventoryInput::Decrement(k), Some(done))
        }
        OpKind::Cas => {
            let m = arg.and_then(Value::as_object).ok_or_else(|| {
                HistoryError::at(src, line, format!("inventory cas needs \"value\": {{\"expect_version\":V,\"stock\":N}}, got {}", shown(arg)))
            })?;
            let expect_version =
                m.get("expect_version")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| {
                        HistoryError::at(
                            src,
                            line,
                            "inventory cas needs an unsigned \"expect_version\"",
                        )
                    })?;
            let input = InventoryInput::Cas {
                expect_version,
                stock: int(m.get("stock"), src, line, "inventory cas's stock")?,
                new_version: m.get("new_version").and_then(Value::as_u64),
            };
            lin(spec, op, input, Some(done))
        }
        _ => return Err(wrong(op, model, src)),
    })
}

/// Partitions by key: operations on different keys are independent.
fn by_key<S: Spec>(
    paired: &Paired,
    mut convert: impl FnMut(&Operation) -> Result<LinOp<S>, HistoryError>,
) -> Result<Vec<Vec<LinOp<S>>>, HistoryError> {
    let mut parts: BTreeMap<String, Vec<LinOp<S>>> = BTreeMap::new();
    // A failed read or write certainly did not happen and observed nothing; a failed
    // CAS or decrement is a refusal the spec must explain, so it stays.
    let informative = |o: &&Operation| {
        o.outcome != Outcome::Fail || matches!(o.kind, OpKind::Cas | OpKind::Decrement)
    };
    for op in paired
        .ops
        .iter()
        .filter(|o| o.kind.is_resource())
        .filter(informative)
    {
        parts
            .entry(op.key().unwrap_or_default().to_string())
            .or_default()
            .push(convert(op)?);
    }
    Ok(parts.into_values().collect())
}

/// Checks the resource: linearizability against its spec, then resource safety where
/// the model says what an update is. `forced` overrides the header's model.
pub fn check(
    history: &History,
    paired: &Paired,
    forced: Option<&ResourceSpec>,
    options: &Options,
    budget: &Budget,
) -> Result<(Vec<CheckReport>, Option<Page>), HistoryError> {
    let src = history.source.as_str();
    let model = match forced {
        Some(m) => m.clone(),
        None => with_initial(infer(history, paired)?, options.initial),
    };
    let reentrant = history.header.reentrant;
    let (mut report, page) = match &model {
        ResourceSpec::Register { initial } | ResourceSpec::CasRegister { initial } => {
            let spec = Arc::new(RegisterSpec { initial: *initial });
            let parts = by_key(paired, |op| register_op(&spec, op, &model, src))?;
            run(&parts, &model, paired, options, budget, reentrant)
        }
        ResourceSpec::Counter { initial } => {
            let spec = Arc::new(RegisterSpec {
                initial: Some(*initial),
            });
            let parts = by_key(paired, |op| register_op(&spec, op, &model, src))?;
            run(&parts, &model, paired, options, budget, reentrant)
        }
        ResourceSpec::Kv => {
            let spec = Arc::new(KvSpec);
            run(
                &by_key(paired, |op| kv_op(&spec, op, src))?,
                &model,
                paired,
                options,
                budget,
                reentrant,
            )
        }
        ResourceSpec::Inventory { initial, .. } => {
            let spec = Arc::new(InventorySpec { initial: *initial });
            let parts = by_key(paired, |op| inventory_op(&spec, op, &model, src))?;
            run(&parts, &model, paired, options, budget, reentrant)
        }
    };
    report.stats.insert("model".into(), name(&model).into());
    let mut reports = vec![report];
    if let Some(safety) = safety(paired, &model) {
        reports.push(safety);
    }
    Ok((reports, page))
}

fn run<S: Spec>(
    partitions: &[Vec<LinOp<S>>],
    model: &ResourceSpec,
    paired: &Paired,
    options: &Options,
    budget: &Budget,
    reentrant: bool,
) -> (CheckReport, Option<Page>) {
    let count: usize = partitions.iter().map(Vec::len).sum();
    let page = |p: &[Vec<LinOp<S>>]| {
        options
            .html
            .then(|| Page::render(linear::info(p), paired, reentrant))
    };
    match linear::decide(partitions, budget) {
        LinResult::Ok => (
            CheckReport::new(
                Property::ResourceLinearizability,
                Verdict::Ok,
                format!(
                    "{count} operations on {} key(s) linearize as a {}",
                    partitions.len(),
                    name(model)
                ),
            )
            .stat("operations", count)
            .stat("partitions", partitions.len()),
            page(partitions),
        ),
        LinResult::Unknown(why) => (
            CheckReport::new(
                Property::ResourceLinearizability,
                Verdict::Unknown,
                LinResult::<S>::why_unknown(why),
            )
            .stat("operations", count),
            None,
        ),
        LinResult::Illegal(ill) => {
            let report = explain(&ill, model, paired).stat("operations", count);
            // Only the report needs porcupine-rs's own partial linearizations, so only
            // it pays for the search that collects them.
            let page = options.html.then(|| {
                Page::render(
                    linear::info(std::slice::from_ref(&ill.ops)),
                    paired,
                    reentrant,
                )
            });
            (report, page)
        }
    }
}

fn explain<S: Spec>(ill: &Illegal<S>, model: &ResourceSpec, paired: &Paired) -> CheckReport {
    let stuck: Vec<&LinOp<S>> = ill.stuck.iter().map(|&i| &ill.ops[i]).collect();
    let summary = match stuck.first() {
        Some(op) => format!(
            "not linearizable as a {}: {} cannot happen after the longest valid order",
            name(model),
            op.describe()
        ),
        None => format!("not linearizable as a {}", name(model)),
    };
    let mut report = CheckReport::new(
        Property::ResourceLinearizability,
        Verdict::Violation,
        summary,
    );
    report.explanation.push(format!(
        "the longest order the {} spec accepts has {} of {} operations; it leaves the state {:?}",
        name(model),
        ill.longest.len(),
        ill.ops.len(),
        ill.states_after
    ));
    let shown = ill.longest.len().saturating_sub(5);
    for &i in &ill.longest[shown..] {
        report
            .explanation
            .push(format!("  {}", ill.ops[i].describe()));
    }
    for op in stuck {
        report.explanation.push(format!(
            "then {} [{} – {}] contradicts every state it could follow",
            op.describe(),
            fmt_time(op.call),
            op.ret.map_or("unknown".to_string(), fmt_time)
        ));
        if let Some(p) = paired.ops.iter().find(|p| p.line() == op.line) {
            report
                .ops
                .push(op_ref(p, S::describe(&op.input, op.output.as_ref())));
        }
    }
    report
}

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
fn safety(paired: &Paired, model: &ResourceSpec) -> Option<CheckReport> {
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
    let mut last_read: BTreeMap<u32, i64> = BTreeMap::new();
    let mut updates = 0i64;
    let mut delta = 0i64;
    let mut sold = 0i64;
    let mut last_update_done = 0u64;
    let mut update_ops = Vec::new();
    // (write, the value its read-modify-write started from)
    let mut bases: Vec<(&Operation, i64)> = Vec::new();
    for &op in ops {
        let read_value = |op: &Operation| match op.result_value() {
            Some(Value::Object(m)) => m.get("stock").and_then(Value::as_i64),
            // A counter never written reads as nil: it holds its initial value.
            None | Some(Value::Null) => Some(initial),
            Some(v) => v.as_i64(),
        };
        let d = match (op.kind, op.outcome) {
            (OpKind::Read, Outcome::Ok) => {
                if let Some(v) = read_value(op) {
                    last_read.insert(op.process, v);
                }
                None
            }
            (OpKind::Decrement, Outcome::Ok) => Some(
                -op.invoke
                    .1
                    .value
                    .as_ref()
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            ),
            // A write that is not declared an update (a restock, a reset) moves the
            // value by an amount the accounting cannot know.
            (OpKind::Write | OpKind::Cas, Outcome::Ok) if !writes_are_updates => return None,
            (OpKind::Write | OpKind::Cas, Outcome::Ok) => {
                let arg = op.invoke.1.value.as_ref();
                let w = match op.kind {
                    OpKind::Cas => arg.and_then(|v| v.get("stock").or_else(|| v.get(1))),
                    _ => arg,
                }
                .and_then(Value::as_i64);
                match (w, last_read.remove(&op.process)) {
                    (Some(w), Some(r)) => {
                        bases.push((op, r));
                        Some(w - r)
                    }
                    // A write that does not follow its own read is not an update this
                    // accounting can follow: say nothing rather than guess.
                    _ => return None,
                }
            }
            (OpKind::Write | OpKind::Cas | OpKind::Decrement, Outcome::Unknown) => return None,
            _ => None,
        };
        if let Some(d) = d {
            updates += 1;
            delta += d;
            if d < 0 {
                sold -= d;
            }
            update_ops.push(op);
            last_update_done = last_update_done.max(op.ret().unwrap_or(u64::MAX));
        }
    }
    // Lost updates are only countable when every update moves the value the same way.
    if updates == 0 || (sold > 0 && sold != -delta) {
        return None;
    }
    let final_read = ops
        .iter()
        .filter(|o| {
            o.kind == OpKind::Read && o.outcome == Outcome::Ok && o.call() > last_update_done
        })
        .filter_map(|o| match o.result_value() {
            Some(Value::Object(m)) => m.get("stock").and_then(Value::as_i64),
            None | Some(Value::Null) => Some(initial),
            Some(v) => v.as_i64(),
        })
        .next_back();
    let oversold = match model {
        ResourceSpec::Inventory { .. } => (sold - initial).max(0),
        _ => 0,
    };
    let lost = final_read.map(|f| (delta.abs() - (f - initial).abs()).max(0));
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
    let lost = lost.unwrap_or(0);
    if lost > 0 || oversold > 0 {
        report.verdict = Verdict::Violation;
        let mut parts = Vec::new();
        if lost > 0 {
            parts.push(format!(
                "{lost} update(s) lost: {updates} updates should have moved the value from {initial} to {}, the final read shows {}",
                initial + delta,
                final_read.unwrap_or_default()
            ));
        }
        if oversold > 0 {
            parts.push(format!(
                "{oversold} unit(s) oversold: {sold} sold from a stock of {initial}"
            ));
        }
        report.summary = parts.join("; ");
        // The evidence: accepted writes that started from the same value — each one
        // after the first overwrote an update it never saw.
        let mut by_base: BTreeMap<i64, Vec<&Operation>> = BTreeMap::new();
        for (op, r) in &bases {
            by_base.entry(*r).or_default().push(op);
        }
        let clash = by_base.iter().find(|(_, ops)| ops.len() > 1);
        report.ops = match clash {
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
                            format!(
                                "c{} wrote {} over its read of {base}",
                                o.process,
                                shown(o.invoke.1.value.as_ref())
                            ),
                        )
                    })
                    .collect()
            }
            None => update_ops
                .iter()
                .take(8)
                .map(|o| op_ref(o, format!("{:?} by c{}", o.kind, o.process)))
                .collect(),
        };
    } else {
        report.summary = match final_read {
            Some(f) => format!("{updates} updates, final value {f} as expected"),
            None => format!("{updates} updates; no final read to count lost updates against"),
        };
    }
    Some(report)
}
