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

mod ops;
use ops::{by_key, inventory_op, kv_op, register_op, shown};

mod safety;
use safety::safety;

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
            let page = (options.html && ill.order_known).then(|| {
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
        Some(op) if ill.order_known => format!(
            "not linearizable as a {}: {} cannot happen after the longest valid order",
            name(model),
            op.describe()
        ),
        Some(op) => format!(
            "not linearizable as a {}: {} contradicts every state the operations before it allow",
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
    if ill.order_known {
        report.explanation.push(format!(
            "the longest order the {} spec accepts has {} of {} operations; it leaves the state {}",
            name(model),
            ill.longest.len(),
            ill.ops.len(),
            S::describe_states(&ill.states_after)
        ));
        let shown = ill.longest.len().saturating_sub(5);
        for &i in &ill.longest[shown..] {
            report
                .explanation
                .push(format!("  {}", ill.ops[i].describe()));
        }
    } else {
        report.explanation.push(format!(
            "checked as a stream, no state the {} operations allow before it meets this answer; the search for their longest order ran out of budget",
            ill.ops.len()
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A violation the stream proved but whose longest order was never searched for
    /// is told by the read no state allows, without an order it does not have.
    #[test]
    fn a_violation_without_its_longest_order_names_the_read_no_state_allows() {
        let spec = Arc::new(RegisterSpec::default());
        let op = |input, output, call, client| LinOp {
            spec: Arc::clone(&spec),
            input,
            output: Some(output),
            call,
            ret: Some(call + 1),
            client,
            line: call as usize,
        };
        let ill = Illegal {
            ops: vec![
                op(RegisterInput::Write(1), RegisterOutput::Written, 10, 0),
                op(RegisterInput::Read, RegisterOutput::Value(Some(2)), 20, 1),
            ],
            longest: Vec::new(),
            stuck: vec![1],
            states_after: linear::States::new(),
            order_known: false,
        };
        let model = ResourceSpec::Register { initial: None };
        let report = explain(&ill, &model, &Paired::default());
        assert!(
            report
                .summary
                .contains("contradicts every state the operations before it allow"),
            "{}",
            report.summary
        );
        assert!(report.explanation[0].contains("ran out of budget"));
        assert!(!report
            .explanation
            .iter()
            .any(|l| l.contains("longest order the")));
    }
}
