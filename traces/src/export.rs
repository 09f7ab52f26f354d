//! Writes a history as Jepsen EDN: one operation map per line inside a top-level
//! vector, as Jepsen writes `history.edn`.
//!
//! ```text
//! ;; locklab-history {"format":"locklab-history","version":1,…}
//! [{:type :invoke, :f :acquire, :process 0, :time 1200, :key "lock", :lease-ns 3000000000, :index 0}
//!  {:type :ok, :f :acquire, :process 0, :time 1850, :key "lock", :token 7, :index 1}
//!  {:type :info, :f :pause, :process :nemesis, :time 2000, :value {"fault" "pause", "target" "c0"}, :index 2}]
//! ```
//!
//! The first line carries the header, so that locklab reads the file back with the
//! meaning it was written with (`fail` a refusal the spec must explain); Jepsen and
//! Knossos skip it as a comment and read `:fail` as "did not happen", which claims less,
//! never more. `value` is written as EDN with string map keys, so it reads back as the
//! same JSON. A completion repeats its invocation's value where Knossos needs it there
//! (marked `:locklab/value-from :invoke`, which locklab reads back as no value).
//!
//! Knossos holds every process to one operation at a time, and an operation that ended
//! `:info` never ends for it: a Jepsen worker whose operation crashed goes on as a new
//! process. So does a locklab client here: after each of its operations that ended
//! `info`, its events carry the next process number of its own (`client + k ×
//! clients`), marked `:locklab/client` with the client it is, which locklab reads back
//! as that client. Filtered to one model's operations (`:acquire`/`:release` for
//! Knossos's mutex), the file is a history Knossos checks as it is.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::error::HistoryError;
use crate::format::{Event, History, OpKind, Phase, Process};
use crate::import::edn::Edn;
use crate::import::jepsen::{CLIENT, HEADER_MARK, VALUE_FROM};

/// The history as Jepsen EDN.
pub fn to_edn(history: &History) -> String {
    let mut out = String::new();
    // Serializing a header (strings, numbers, JSON values) cannot fail; were it to, the
    // file would still be a Jepsen history, read back with Knossos's meaning.
    if let Ok(header) = serde_json::to_string(&history.header) {
        let _ = writeln!(out, ";; {HEADER_MARK} {header}");
        out.push_str(
            ";; Written by locklab export: locklab reads it back with the meaning above (fail = refused);\n\
             ;; Jepsen and Knossos read :fail as did-not-happen and a nil :ok :read as unconstrained.\n",
        );
    }
    out.push('[');
    let mut open: HashMap<Process, &Event> = HashMap::new();
    // Processes a client's events take: one more Jepsen process per operation of its
    // that ended `info`.
    let stride = history
        .events
        .iter()
        .filter_map(|(_, e)| e.process.client())
        .max()
        .map_or(1, |c| u64::from(c) + 1);
    let mut rebirths: HashMap<u32, u64> = HashMap::new();
    for (index, (_, event)) in history.events.iter().enumerate() {
        if index > 0 {
            out.push_str("\n ");
        }
        let invocation = match event.phase {
            _ if event.op.is_point() => None,
            Phase::Invoke => {
                open.insert(event.process, event);
                None
            }
            _ => open.remove(&event.process).filter(|i| i.op == event.op),
        };
        let process = match event.process {
            Process::Client(c) => {
                let k = rebirths.get(&c).copied().unwrap_or(0);
                Written::Client(c, u64::from(c) + k * stride)
            }
            Process::Nemesis(_) => Written::Nemesis,
        };
        op(
            &mut out,
            event,
            process,
            invocation_value(event, invocation).as_ref(),
            index,
        );
        if let (Process::Client(c), Phase::Info) = (event.process, event.phase) {
            if !event.op.is_point() {
                *rebirths.entry(c).or_default() += 1;
            }
        }
    }
    out.push_str("]\n");
    out
}

/// The `:process` an event is written with.
#[derive(Clone, Copy)]
enum Written {
    /// Client `.0` as Jepsen process `.1`.
    Client(u32, u64),
    /// `:nemesis`.
    Nemesis,
}

/// Why Knossos's `history/complete` would refuse the EDN history `text` filtered to
/// the operations whose `:f` is in `fs` (every process has one operation at a time,
/// never completes one it did not invoke, never invokes again after an `:info`, and a
/// `:fail` repeats its invocation's value), or `None` when it would take it. Processes
/// are read as Knossos reads them: as written.
pub fn knossos_refusal(text: &str, fs: &[&str]) -> Result<Option<String>, HistoryError> {
    let forms = crate::import::jepsen::read_forms("the export", text)?;
    let mut open: HashMap<String, (usize, Option<String>)> = HashMap::new();
    let mut crashed: HashMap<String, usize> = HashMap::new();
    for (line, op) in &forms {
        let f = op.get("f").and_then(Edn::keyword);
        let process = op.get("process");
        if !f.is_some_and(|f| fs.contains(&f)) || !matches!(process, Some(Edn::Int(_))) {
            continue;
        }
        let p = process.map(Edn::to_string).unwrap_or_default();
        let value = op.get("value").map(Edn::to_string);
        if let Some(at) = crashed.get(&p) {
            return Ok(Some(format!(
                "line {line}: process {p} acts again after its operation crashed (:info, line {at})"
            )));
        }
        match op.get("type").and_then(Edn::keyword) {
            Some("invoke") => {
                if open.insert(p.clone(), (*line, value)).is_some() {
                    return Ok(Some(format!(
                        "line {line}: process {p} invokes while already running"
                    )));
                }
            }
            phase => {
                let Some((_, invoked)) = open.remove(&p) else {
                    return Ok(Some(format!(
                        "line {line}: process {p} completes without an invocation"
                    )));
                };
                if phase == Some("fail") && invoked != value {
                    return Ok(Some(format!(
                        "line {line}: a :fail whose value is not its invocation's"
                    )));
                }
                if phase == Some("info") {
                    crashed.insert(p, *line);
                }
            }
        }
    }
    Ok(None)
}

/// The value a completion must carry for Knossos, when locklab left it on the
/// invocation alone. Knossos takes an `:ok` completion's value as the operation's (an
/// `:ok :write` without one would write nil) and insists that a `:fail` repeats its
/// invocation's; a read's result is its own.
fn invocation_value(completion: &Event, invocation: Option<&Event>) -> Option<Value> {
    let carried = match completion.phase {
        Phase::Ok => !matches!(completion.op, OpKind::Read | OpKind::Get),
        Phase::Fail => true,
        Phase::Invoke | Phase::Info => false,
    };
    if !carried || completion.value.is_some() {
        return None;
    }
    invocation.and_then(Event::value_json)
}

fn op(out: &mut String, e: &Event, process: Written, copied: Option<&Value>, index: usize) {
    let phase = match e.phase {
        Phase::Invoke => "invoke",
        Phase::Ok => "ok",
        Phase::Fail => "fail",
        Phase::Info => "info",
    };
    let _ = write!(out, "{{:type :{phase}, :f :{}, :process ", f(e));
    match process {
        Written::Client(c, p) if p != u64::from(c) => {
            let _ = write!(out, "{p}, :{CLIENT} {c}");
        }
        Written::Client(_, p) => {
            let _ = write!(out, "{p}");
        }
        Written::Nemesis => out.push_str(":nemesis"),
    }
    let _ = write!(out, ", :time {}", e.time);
    if let Some(k) = &e.key {
        out.push_str(", :key ");
        string(out, k);
    }
    if let Some(v) = &e.value_json() {
        out.push_str(", :value ");
        value(out, v);
    } else if let Some(v) = copied {
        // Marked, so that locklab reads the completion back without it.
        out.push_str(", :value ");
        value(out, v);
        let _ = write!(out, ", :{VALUE_FROM} :invoke");
    }
    for (name, field) in [
        ("token", e.token),
        ("owner", e.owner),
        ("lease-ns", e.lease_ns),
    ] {
        if let Some(n) = field {
            let _ = write!(out, ", :{name} {n}");
        }
    }
    if let Some(n) = &e.note {
        out.push_str(", :note ");
        string(out, n);
    }
    let _ = write!(out, ", :index {index}}}");
}

/// The `:f` of an event: the op's name, or for the nemesis the fault it names (Jepsen
/// nemeses say `:f :partition`, `:f :kill`) when that is a plain keyword that names no
/// op (the op is what locklab reads back from `:f`).
fn f(e: &Event) -> String {
    if e.op == OpKind::Nemesis && e.process == Process::NEMESIS {
        let fault = e.injected().map(|i| i.what.name());
        let fault = fault.as_deref().map(|s| s.strip_prefix(':').unwrap_or(s));
        if let Some(name) = fault.filter(|s| is_keyword_name(s) && OpKind::from_name(s).is_none()) {
            return name.to_string();
        }
    }
    match serde_json::to_value(e.op) {
        Ok(Value::String(s)) => s,
        _ => "unknown".to_string(),
    }
}

/// Whether `s` may follow a `:` as a keyword and read back as itself.
fn is_keyword_name(s: &str) -> bool {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "*!_?<>=".contains(c));
    first_ok
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "*+!-_?<>=.".contains(c))
}

/// A JSON value as EDN that reads back as the same JSON.
fn value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else if let Some(f) = n.as_f64() {
                // Debug keeps a `.0` or an exponent, so the number reads back as a float.
                let _ = write!(out, "{f:?}");
            }
        }
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(out, k);
                out.push(' ');
                value(out, x);
            }
            out.push('}');
        }
    }
}

/// An EDN string literal, on one line.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Backend;
    use crate::format::Header;

    #[test]
    fn writes_one_op_map_per_line() {
        let mut h = History {
            source: "t".into(),
            header: Header::new("test", Backend::Simulated),
            ..History::default()
        };
        let mut a = Event::new(Process::Client(0), OpKind::Acquire, Phase::Invoke, 123);
        a.key = Some("lock".into());
        let mut b = Event::new(Process::Client(0), OpKind::Acquire, Phase::Ok, 150);
        b.token = Some(7);
        let mut n = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 160);
        n.value = Some(serde_json::json!({"fault": "pause", "target": "c0"}).into());
        h.events = vec![(2, a), (3, b), (4, n)];
        let edn = to_edn(&h);
        let lines: Vec<&str> = edn.lines().filter(|l| !l.starts_with(';')).collect();
        assert_eq!(
            lines,
            [
                r#"[{:type :invoke, :f :acquire, :process 0, :time 123, :key "lock", :index 0}"#,
                r#" {:type :ok, :f :acquire, :process 0, :time 150, :token 7, :index 1}"#,
                r#" {:type :info, :f :pause, :process :nemesis, :time 160, :value {"fault" "pause", "target" "c0"}, :index 2}]"#,
            ]
        );
    }

    #[test]
    fn a_client_goes_on_as_a_new_process_after_an_info_and_reads_back_as_itself() {
        let mut h = History {
            source: "t".into(),
            header: Header::new("test", Backend::Simulated),
            ..History::default()
        };
        let ev = |c: u32, op: OpKind, phase: Phase, t: u64| {
            (t as usize, Event::new(Process::Client(c), op, phase, t))
        };
        h.events = vec![
            ev(0, OpKind::Acquire, Phase::Invoke, 1),
            ev(1, OpKind::Acquire, Phase::Invoke, 2),
            ev(0, OpKind::Acquire, Phase::Info, 3),
            ev(1, OpKind::Acquire, Phase::Ok, 4),
            ev(1, OpKind::Enter, Phase::Ok, 5),
            ev(0, OpKind::Acquire, Phase::Invoke, 6),
            ev(1, OpKind::Release, Phase::Invoke, 7),
            ev(1, OpKind::Release, Phase::Ok, 8),
            ev(0, OpKind::Acquire, Phase::Ok, 9),
        ];
        let edn = to_edn(&h);
        assert!(
            edn.contains(":process 2, :locklab/client 0, :time 6"),
            "{edn}"
        );
        assert_eq!(
            knossos_refusal(&edn, &["acquire", "release"]).expect("reads"),
            None,
            "{edn}"
        );
        // Without the new process, Knossos would refuse it.
        let as_recorded = edn.replace(":process 2, :locklab/client 0", ":process 0");
        assert!(knossos_refusal(&as_recorded, &["acquire", "release"])
            .expect("reads")
            .is_some_and(|why| why.contains("crashed")));
        let back = crate::import::jepsen::parse("t", &edn).expect("locklab's reading");
        let processes: Vec<Process> = back.events.iter().map(|(_, e)| e.process).collect();
        let recorded: Vec<Process> = h.events.iter().map(|(_, e)| e.process).collect();
        assert_eq!(processes, recorded);
    }

    #[test]
    fn strings_and_numbers_read_back() {
        let mut out = String::new();
        value(
            &mut out,
            &serde_json::json!(["a\"b\\c\nd\u{1}é", 1.0, -2, u64::MAX, 1e300]),
        );
        assert_eq!(
            out,
            r#"["a\"b\\c\nd\u0001é" 1.0 -2 18446744073709551615 1e300]"#
        );
    }
}
