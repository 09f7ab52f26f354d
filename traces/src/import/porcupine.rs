//! Porcupine's etcd Jepsen logs: `INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]`.
//! Lines that are not operations (Jepsen's other log output) are skipped; a line that
//! looks like an operation but is malformed is an error.

use crate::error::HistoryError;
use crate::format::Backend;
use crate::format::{Event, Header, History, OpKind, Phase};

use super::edn::{Edn, Reader};
use super::jepsen::{op_kind, phase, process};

/// What marks an operation line of the log.
pub(crate) const MARK: &str = "jepsen.util - ";

/// Parses an etcd Jepsen log. Times are line numbers: the log is in real-time order and
/// has no clock of its own.
pub fn parse_etcd(source: &str, text: &str) -> Result<History, HistoryError> {
    let mut history = History {
        source: source.to_string(),
        header: Header::new("etcd-jepsen", Backend::Imported),
        ..History::default()
    };
    history.header.resource = Some(crate::format::ResourceSpec::CasRegister { initial: None });
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some(at) = raw.find(MARK) else { continue };
        let rest = &raw[at + MARK.len()..];
        let event = parse_op(rest, line as u64).map_err(|m| HistoryError::at(source, line, m))?;
        history.events.push((line, event));
    }
    Ok(history)
}

fn parse_op(rest: &str, time: u64) -> Result<Event, String> {
    let mut reader = Reader::new(rest);
    let mut next = |what: &str| reader.value().map_err(|e| format!("{what}: {}", e.message));
    let proc = next("process")?;
    let typ = next("type")?;
    let f = next("op")?;
    let value = next("value")?;
    let process = process(&proc)?;
    let phase = phase(
        typ.keyword()
            .ok_or_else(|| format!("expected a :type keyword, got {typ}"))?,
    )?;
    let name = f
        .keyword()
        .ok_or_else(|| format!("expected an op keyword, got {f}"))?;
    let kind = if process == crate::format::Process::NEMESIS {
        OpKind::Nemesis
    } else {
        op_kind(name)?
    };
    let mut e = Event::new(process, kind, phase, time);
    e.value = match (&value, phase) {
        (Edn::Nil, _) => None,
        // `:timed-out` on an unknown or failed completion says nothing about the value.
        (Edn::Keyword(_), Phase::Info | Phase::Fail) => None,
        (v, _) => Some(v.to_json().into()),
    };
    if kind == OpKind::Nemesis {
        e.value = Some(serde_json::json!({ "fault": name, "value": value.to_json() }).into());
    }
    Ok(e)
}
