//! Jepsen/Knossos EDN histories.

use crate::error::HistoryError;
use crate::format::{Event, Header, History, OpKind, Phase, Process};

use super::edn::{Edn, Reader};

/// The `:f` values understood, and what they become.
const OPS: [(&str, OpKind); 10] = [
    ("read", OpKind::Read),
    ("write", OpKind::Write),
    ("cas", OpKind::Cas),
    ("acquire", OpKind::Acquire),
    ("release", OpKind::Release),
    ("renew", OpKind::Renew),
    ("get", OpKind::Get),
    ("put", OpKind::Put),
    ("append", OpKind::Append),
    ("decrement", OpKind::Decrement),
];

/// The op a `:f` names, or an error listing the known ones.
pub fn op_kind(f: &str) -> Result<OpKind, String> {
    OPS.iter()
        .find(|(n, _)| *n == f)
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let known: Vec<String> = OPS.iter().map(|(n, _)| format!(":{n}")).collect();
            format!("unknown op :f :{f} (expected one of {})", known.join(", "))
        })
}

/// The phase a `:type` names.
pub fn phase(t: &str) -> Result<Phase, String> {
    match t {
        "invoke" => Ok(Phase::Invoke),
        "ok" => Ok(Phase::Ok),
        "fail" => Ok(Phase::Fail),
        "info" => Ok(Phase::Info),
        other => Err(format!(
            "unknown :type :{other} (expected :invoke, :ok, :fail or :info)"
        )),
    }
}

/// The process an EDN `:process` names.
pub fn process(v: &Edn) -> Result<Process, String> {
    match v {
        Edn::Int(i) => u32::try_from(*i)
            .map(Process::Client)
            .map_err(|_| format!(":process {i} is not a process number")),
        Edn::Keyword(k) if k == "nemesis" => Ok(Process::NEMESIS),
        other => Err(format!(
            ":process must be a number or :nemesis, got {other}"
        )),
    }
}

/// Parses an EDN history: one map per line, or a single vector of maps.
pub fn parse(source: &str, text: &str) -> Result<History, HistoryError> {
    let mut reader = Reader::new(text);
    let mut maps: Vec<(usize, Edn)> = Vec::new();
    let edn_err = |e: super::edn::EdnError| HistoryError::at(source, e.line, e.message);
    let wrapped = reader.next_byte() == Some(b'[');
    if wrapped {
        reader.take_byte();
        loop {
            match reader.next_byte() {
                None => {
                    return Err(HistoryError::at(
                        source,
                        reader.line(),
                        "truncated: the history vector has no closing ']'",
                    ))
                }
                Some(b']') => {
                    reader.take_byte();
                    break;
                }
                Some(_) => {
                    let line = reader.line();
                    maps.push((line, reader.value().map_err(edn_err)?));
                }
            }
        }
    } else {
        while !reader.at_end() {
            let line = reader.line();
            maps.push((line, reader.value().map_err(edn_err)?));
        }
    }
    if maps.is_empty() {
        return Err(HistoryError::whole(source, "empty history: no operations"));
    }
    let mut history = History {
        source: source.to_string(),
        header: Header::new("jepsen-import", "imported"),
        ..History::default()
    };
    for (index, (line, map)) in maps.into_iter().enumerate() {
        history.events.push((
            line,
            event(&map, index as u64).map_err(|m| HistoryError::at(source, line, m))?,
        ));
    }
    Ok(history)
}

fn event(map: &Edn, index: u64) -> Result<Event, String> {
    if !matches!(map, Edn::Map(_)) {
        return Err(format!(
            "expected an operation map {{:type … :f … :process …}}, got {map}"
        ));
    }
    let process = process(map.get("process").ok_or("missing :process")?)?;
    let phase = phase(
        map.get("type")
            .and_then(Edn::keyword)
            .ok_or("missing or non-keyword :type")?,
    )?;
    let f = map.get("f").ok_or("missing :f")?;
    let time = match map.get("time") {
        Some(Edn::Int(t)) if *t >= 0 => *t as u64,
        Some(other) => {
            return Err(format!(
                ":time must be a non-negative integer (ns), got {other}"
            ))
        }
        None => index,
    };
    let value = map.get("value").map(Edn::to_json).filter(|v| !v.is_null());
    if process == Process::NEMESIS {
        let mut e = Event::new(process, OpKind::Nemesis, phase, time);
        let mut detail = serde_json::Map::new();
        detail.insert("fault".into(), f.to_json());
        if let Some(v) = value {
            detail.insert("value".into(), v);
        }
        e.value = Some(serde_json::Value::Object(detail));
        return Ok(e);
    }
    let name = f
        .keyword()
        .ok_or_else(|| format!(":f must be a keyword, got {f}"))?;
    let mut e = Event::new(process, op_kind(name)?, phase, time);
    e.value = value;
    e.key = match map.get("key") {
        None | Some(Edn::Nil) => None,
        Some(Edn::Str(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok(e)
}
