//! Jepsen/Knossos EDN histories, read as the tool that wrote them means them.
//!
//! The file is a vector `[…]` or list `(…)` of operation maps, or one map per line;
//! Jepsen 0.3's record literals (`#jepsen.history.Op{…}`) read as the map they tag. A
//! client is a process with an integer `:process`; any other process (`:nemesis`, a
//! named nemesis, …) performs faults and meta-level events, as `jepsen.history`
//! documents, and becomes a nemesis event.
//!
//! What `:fail`, `:info` and a nil read mean depends on the tool ([`Semantics`]):
//! Knossos for Jepsen histories, Porcupine's own reading for Porcupine's kv files, and
//! locklab's for a history `locklab export` wrote (its first line says so).

use crate::format::Backend;
use std::collections::HashMap;

use serde_json::Value;

use crate::error::HistoryError;
use crate::format::{Event, Header, History, LockModel, OpKind, Phase, Process, ResourceSpec};

use super::edn::{Edn, EdnError, Reader};

/// The comment that opens a history `locklab export` wrote, followed by its header as
/// JSON: `;; locklab-history {"format":"locklab-history",…}`.
pub const HEADER_MARK: &str = "locklab-history";

/// The key that marks a completion's `:value` as its invocation's, written for Jepsen
/// and Knossos and not part of the locklab event.
pub const VALUE_FROM: &str = "locklab/value-from";

/// The key that names the client a Jepsen process is, in a history `locklab export`
/// wrote: a client whose operation ended `:info` goes on as a new process, as Knossos
/// requires, and reads back as the client it is.
pub const CLIENT: &str = "locklab/client";

/// How the operations of an EDN history are meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    /// Jepsen and Knossos: `:fail` certainly did not happen and constrains nothing (both
    /// events are dropped); `:info`, or no completion, may take effect at any time after
    /// the invocation; an `:ok` `:read` of nil constrains nothing (imported as `info`);
    /// an `:ok` completion's value is the operation's value; operations are ordered as
    /// the file orders them. Acquire/release follow Knossos's mutex, read/write/cas its
    /// cas-register (initially nil).
    Knossos,
    /// Porcupine's kv test files, as Porcupine's own test reads them: every event kept as
    /// written, times from `:time` or else the position in the file.
    Porcupine,
    /// A history `locklab export` wrote: locklab's own meaning (`fail` is a refusal the
    /// spec must explain) and the header it carried.
    Locklab,
}

/// The `:f` values of Jepsen histories understood, and what they become.
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

/// Any locklab op by its name (`acquire`, `enter`, `nemesis`, …).
fn locklab_op(f: &str) -> Result<OpKind, String> {
    OpKind::from_name(f).ok_or_else(|| format!("unknown op :f :{f} for a locklab history"))
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

/// The process an EDN `:process` names: an integer is a client, anything else (as
/// `jepsen.history` has it) a nemesis.
pub fn process(v: &Edn) -> Result<Process, String> {
    match v {
        Edn::Int(i) => u32::try_from(*i)
            .map(Process::Client)
            .map_err(|_| format!(":process {i} is not a client number (0 to {})", u32::MAX)),
        Edn::BigInt(d) => Err(format!(
            ":process {d} is not a client number (0 to {})",
            u32::MAX
        )),
        _ => Ok(Process::NEMESIS),
    }
}

/// Parses an EDN history: a history `locklab export` wrote with locklab's meaning, any
/// other as Jepsen and Knossos mean it.
pub fn parse(source: &str, text: &str) -> Result<History, HistoryError> {
    parse_as(source, text, None)
}

/// Parses Porcupine's kv EDN files as Porcupine's own test reads them.
pub fn parse_porcupine_kv(source: &str, text: &str) -> Result<History, HistoryError> {
    parse_as(source, text, Some(Semantics::Porcupine))
}

/// Parses an EDN history with the given meaning (`None`: locklab's when the file opens
/// with locklab's header comment, else Knossos's).
pub fn parse_as(
    source: &str,
    text: &str,
    semantics: Option<Semantics>,
) -> Result<History, HistoryError> {
    let exported = locklab_header(source, text)?;
    let semantics = semantics.unwrap_or(if exported.is_some() {
        Semantics::Locklab
    } else {
        Semantics::Knossos
    });
    let forms = read_forms(source, text)?;
    let header = match (semantics, exported) {
        (Semantics::Locklab, Some(h)) => h,
        (Semantics::Locklab, None) => Header::new("edn-import", Backend::Imported),
        _ => Header::new("jepsen-import", Backend::Imported),
    };
    let mut history = History {
        source: source.to_string(),
        header,
        ..History::default()
    };
    let mut times = Vec::with_capacity(forms.len());
    for (line, map) in &forms {
        let (event, time) =
            event(map, semantics).map_err(|m| HistoryError::at(source, *line, m))?;
        history.events.push((*line, event));
        times.push(time);
    }
    let by_position = |(i, t): (usize, &Option<u64>)| t.unwrap_or(i as u64);
    let times: Vec<u64> = match semantics {
        Semantics::Knossos => knossos_times(&times, &mut history.warnings),
        _ => times.iter().enumerate().map(by_position).collect(),
    };
    for ((_, e), t) in history.events.iter_mut().zip(times) {
        e.time = t;
    }
    if semantics == Semantics::Knossos {
        knossos(&mut history);
    }
    Ok(history)
}

/// The header of a history `locklab export` wrote, from the comments before its first
/// form.
fn locklab_header(source: &str, text: &str) -> Result<Option<Header>, HistoryError> {
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let Some(comment) = trimmed.strip_prefix(';') else {
            return Ok(None);
        };
        let comment = comment.trim_start_matches(';').trim_start();
        if let Some(json) = comment.strip_prefix(HEADER_MARK) {
            if json.starts_with(char::is_whitespace) {
                return crate::reader::parse_header(source, i + 1, json.trim()).map(Some);
            }
        }
    }
    Ok(None)
}

/// The operation forms and the lines they start on: the elements of a top-level vector
/// or list, or every top-level form.
pub(crate) fn read_forms(source: &str, text: &str) -> Result<Vec<(usize, Edn)>, HistoryError> {
    let edn_err = |e: EdnError| HistoryError::at(source, e.line, e.message);
    let mut reader = Reader::new(text);
    let mut forms = Vec::new();
    let close = match reader.next_byte().map_err(edn_err)? {
        Some(b'[') => b']',
        Some(b'(') => b')',
        _ => {
            while !reader.at_end().map_err(edn_err)? {
                let line = reader.line();
                forms.push((line, reader.value().map_err(edn_err)?));
            }
            return Ok(forms);
        }
    };
    let open_line = reader.line();
    reader.take_byte();
    loop {
        match reader.next_byte().map_err(edn_err)? {
            None => {
                return Err(HistoryError::at(
                    source,
                    open_line,
                    format!(
                        "truncated: the history's '{}' (line {open_line}) is never closed",
                        if close == b']' { '[' } else { '(' }
                    ),
                ))
            }
            Some(c) if c == close => {
                reader.take_byte();
                break;
            }
            Some(_) => {
                let line = reader.line();
                forms.push((line, reader.value().map_err(edn_err)?));
            }
        }
    }
    if !reader.at_end().map_err(edn_err)? {
        return Err(HistoryError::at(
            source,
            reader.line(),
            format!(
                "unexpected content after the history's closing '{}' (line {open_line} opened it)",
                close as char
            ),
        ));
    }
    Ok(forms)
}

/// One operation map as an event (its time set later) and the `:time` it gave.
fn event(map: &Edn, semantics: Semantics) -> Result<(Event, Option<u64>), String> {
    if !matches!(map, Edn::Map(_)) {
        return Err(format!(
            "expected an operation map {{:type … :f … :process …}}, got {}",
            map.short(80)
        ));
    }
    let proc_edn = map.get("process").ok_or("missing :process")?;
    let process = match (semantics, map.get(CLIENT)) {
        (Semantics::Locklab, Some(c)) => process(c)?,
        _ => process(proc_edn)?,
    };
    let phase = phase(
        map.get("type")
            .and_then(Edn::keyword)
            .ok_or("missing or non-keyword :type")?,
    )?;
    let time = match map.get("time") {
        None => None,
        Some(t) => Some(t.as_u64().ok_or_else(|| {
            format!(
                ":time must be a non-negative integer (ns), got {}",
                t.short(40)
            )
        })?),
    };
    let value = map.get("value").map(Edn::to_json).filter(|v| !v.is_null());
    let f = map.get("f");
    let note = |k: &str| match map.get(k) {
        None | Some(Edn::Nil) => None,
        Some(Edn::Str(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let named_nemesis = proc_edn.keyword() == Some("nemesis");
    // locklab writes its nemesis events with the fault as `:f` (never an op's name),
    // and anything else the nemesis recorded by the op's name.
    let nemesis_op = match (semantics, f.and_then(Edn::keyword)) {
        (Semantics::Locklab, Some(name)) if named_nemesis => OpKind::from_name(name),
        _ => None,
    };
    let mut e = if process == Process::NEMESIS && nemesis_op.is_none_or(|k| k == OpKind::Nemesis) {
        let mut e = Event::new(process, OpKind::Nemesis, phase, 0);
        e.value = if semantics == Semantics::Locklab && named_nemesis {
            value.map(Into::into)
        } else {
            let mut detail = serde_json::Map::new();
            if let Some(f) = f {
                let fault = match f {
                    Edn::Keyword(k) => Value::String(k.clone()),
                    other => other.to_json(),
                };
                detail.insert("fault".into(), fault);
            }
            if let Some(v) = value {
                detail.insert("value".into(), v);
            }
            if !named_nemesis {
                detail.insert("process".into(), proc_edn.to_json());
            }
            Some(Value::Object(detail).into())
        };
        e.note = note("note").or_else(|| note("error"));
        e
    } else {
        let f = f.ok_or("missing :f")?;
        let name = f
            .keyword()
            .ok_or_else(|| format!(":f must be a keyword, got {}", f.short(40)))?;
        let kind = match semantics {
            Semantics::Locklab => locklab_op(name)?,
            _ => op_kind(name)?,
        };
        let mut e = Event::new(process, kind, phase, 0);
        e.value = value.map(Into::into);
        e.key = note("key").map(Into::into);
        if semantics == Semantics::Knossos {
            e.note = note("error");
        }
        e
    };
    if semantics == Semantics::Locklab {
        let int = |k: &str| -> Result<Option<u64>, String> {
            match map.get(k) {
                None | Some(Edn::Nil) => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                    format!(":{k} must be a non-negative integer, got {}", v.short(40))
                }),
            }
        };
        e.key = note("key").map(Into::into);
        if map.get(VALUE_FROM).and_then(Edn::keyword) == Some("invoke") {
            e.value = None;
        }
        e.token = int("token")?;
        e.owner = int("owner")?;
        e.lease_ns = int("lease-ns")?;
        e.note = note("note");
    }
    Ok((e, time))
}

/// Knossos orders operations by their place in the history, not by `:time`. The times
/// say the same when they increase strictly down the file, and then they are kept (the
/// report shows them); otherwise each event's time is its position.
fn knossos_times(times: &[Option<u64>], warnings: &mut Vec<String>) -> Vec<u64> {
    let given: Vec<u64> = times.iter().flatten().copied().collect();
    if given.len() == times.len() && given.windows(2).all(|w| w[0] < w[1]) {
        return given;
    }
    if !given.is_empty() {
        warnings.push(
            "the :time values do not increase strictly down the file (or some are missing): \
             operations are ordered by their place in the history, as Knossos orders them"
                .to_string(),
        );
    }
    (0..times.len() as u64).collect()
}

/// Applies Knossos's meaning to a history read event by event, and declares its models.
fn knossos(history: &mut History) {
    let kinds: Vec<OpKind> = history
        .events
        .iter()
        .filter(|(_, e)| e.process.client().is_some() && !e.op.is_point())
        .map(|(_, e)| e.op)
        .collect();
    let has = |k: &[OpKind]| kinds.iter().any(|x| k.contains(x));
    if has(&[OpKind::Acquire, OpKind::Release]) {
        history.header.lock = Some(LockModel::Mutex);
    }
    if has(&[OpKind::Read, OpKind::Write, OpKind::Cas])
        && !has(&[OpKind::Get, OpKind::Put, OpKind::Append])
    {
        history.header.resource = Some(ResourceSpec::CasRegister { initial: None });
    }
    let mut drop = vec![false; history.events.len()];
    let mut open: HashMap<u32, usize> = HashMap::new();
    let (mut failed, mut nil_reads, mut lone_infos) = (0usize, 0usize, 0usize);
    for i in 0..history.events.len() {
        let (phase, op, client) = {
            let e = &history.events[i].1;
            (e.phase, e.op, e.process.client())
        };
        let Some(p) = client.filter(|_| !op.is_point()) else {
            continue;
        };
        // A malformed pairing (a second invocation, a completion of another op, one
        // without an invocation) is left for the pairing to report with its line.
        let invocation = open
            .get(&p)
            .copied()
            .filter(|&j| phase != Phase::Invoke && history.events[j].1.op == op);
        match (phase, invocation) {
            (Phase::Invoke, _) => {
                open.entry(p).or_insert(i);
            }
            (Phase::Fail, Some(j)) => {
                open.remove(&p);
                drop[i] = true;
                drop[j] = true;
                failed += 1;
            }
            (Phase::Ok, Some(j)) => {
                open.remove(&p);
                // Knossos's `complete`: the completion's value is the operation's. A read
                // takes its result from the completion here anyway; where a write's
                // completion says nil, the invocation's value is kept (Knossos would
                // write nil, which a register of integers cannot hold).
                let result = history.events[i].1.value.clone();
                match result {
                    Some(v) if !matches!(op, OpKind::Read | OpKind::Get) => {
                        history.events[j].1.value = Some(v);
                    }
                    None if op == OpKind::Read => {
                        let c = &mut history.events[i].1;
                        c.phase = Phase::Info;
                        c.note = Some("read nil: constrains nothing (Knossos)".to_string());
                        nil_reads += 1;
                    }
                    _ => {}
                }
            }
            (Phase::Info, Some(_)) => {
                open.remove(&p);
                // What an indeterminate operation returned says nothing (`:timed-out`).
                history.events[i].1.value = None;
            }
            (Phase::Info, None) if !open.contains_key(&p) => {
                // Knossos pairs a client's :info with no invocation to nothing.
                drop[i] = true;
                lone_infos += 1;
            }
            _ => {}
        }
    }
    let mut keep = drop.iter().map(|d| !d);
    history.events.retain(|_| keep.next().unwrap_or(true));
    if failed > 0 {
        history.warnings.push(format!(
            "{failed} :fail operation(s) dropped: in Jepsen a :fail certainly did not happen, so (as in Knossos) it constrains nothing"
        ));
    }
    if nil_reads > 0 {
        history.warnings.push(format!(
            "{nil_reads} :ok read(s) of nil imported as info: Knossos's register models accept a nil read in any state"
        ));
    }
    if lone_infos > 0 {
        history.warnings.push(format!(
            "{lone_infos} client :info event(s) without an invocation ignored, as Knossos ignores them"
        ));
    }
}
