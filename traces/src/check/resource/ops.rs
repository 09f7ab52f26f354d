//! A history's operations as each resource model's inputs and outputs, one
//! linearizability operation each, grouped by key; what is wrong with one names its
//! line.

use super::*;

fn int(v: Option<&Value>, source: &str, line: usize, what: &str) -> Result<i64, HistoryError> {
    v.and_then(Value::as_i64).ok_or_else(|| {
        HistoryError::at(
            source,
            line,
            format!("{what} needs an integer \"value\", got {}", shown(v)),
        )
    })
}

pub(super) fn shown(v: Option<&Value>) -> String {
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
            "{} is not an operation of the {} resource model",
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

pub(super) fn register_op(
    spec: &Arc<RegisterSpec>,
    op: &Operation,
    model: &ResourceSpec,
    src: &str,
) -> Result<LinOp<RegisterSpec>, HistoryError> {
    let line = op.line();
    let arg = op.invoke.1.value_json();
    let arg = arg.as_ref();
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
                (v, _) => {
                    RegisterOutput::Value(Some(int(v.as_ref(), src, op.result_line(), "read")?))
                }
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

pub(super) fn kv_op(
    spec: &Arc<KvSpec>,
    op: &Operation,
    src: &str,
) -> Result<LinOp<KvSpec>, HistoryError> {
    let line = op.line();
    let key = op
        .key()
        .ok_or_else(|| HistoryError::at(src, line, format!("{} needs a \"key\"", op.kind)))?
        .to_string();
    let arg = op.invoke.1.value_json();
    let arg = arg.as_ref();
    Ok(match op.kind {
        OpKind::Get if op.outcome == Outcome::Unknown => lin(spec, op, KvInput::Get(key), None),
        OpKind::Get => {
            let v = text(op.result_value().as_ref(), src, op.result_line(), "get")?;
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

pub(super) fn inventory_op(
    spec: &Arc<InventorySpec>,
    op: &Operation,
    model: &ResourceSpec,
    src: &str,
) -> Result<LinOp<InventorySpec>, HistoryError> {
    let line = op.line();
    let arg = op.invoke.1.value_json();
    let arg = arg.as_ref();
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
                    stock: int(m.get("stock"), src, op.result_line(), "read's stock")?,
                    version: m.get("version").and_then(Value::as_u64),
                },
                v => InventoryOutput::Read {
                    stock: int(v.as_ref(), src, op.result_line(), "read")?,
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
pub(super) fn by_key<S: Spec>(
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
