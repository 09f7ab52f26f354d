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

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::format::{Event, History, OpKind, Phase, Process};
use crate::import::jepsen::{HEADER_MARK, VALUE_FROM};

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
        op(&mut out, event, invocation_value(event, invocation), index);
    }
    out.push_str("]\n");
    out
}

/// The value a completion must carry for Knossos, when locklab left it on the
/// invocation alone. Knossos takes an `:ok` completion's value as the operation's (an
/// `:ok :write` without one would write nil) and insists that a `:fail` repeats its
/// invocation's; a read's result is its own.
fn invocation_value<'a>(completion: &Event, invocation: Option<&'a Event>) -> Option<&'a Value> {
    let carried = match completion.phase {
        Phase::Ok => !matches!(completion.op, OpKind::Read | OpKind::Get),
        Phase::Fail => true,
        Phase::Invoke | Phase::Info => false,
    };
    if !carried || completion.value.is_some() {
        return None;
    }
    invocation.and_then(|i| i.value.as_ref())
}

fn op(out: &mut String, e: &Event, copied: Option<&Value>, index: usize) {
    let phase = match e.phase {
        Phase::Invoke => "invoke",
        Phase::Ok => "ok",
        Phase::Fail => "fail",
        Phase::Info => "info",
    };
    let _ = write!(out, "{{:type :{phase}, :f :{}, :process ", f(e));
    match e.process {
        Process::Client(c) => {
            let _ = write!(out, "{c}");
        }
        Process::Nemesis(_) => out.push_str(":nemesis"),
    }
    let _ = write!(out, ", :time {}", e.time);
    if let Some(k) = &e.key {
        out.push_str(", :key ");
        string(out, k);
    }
    if let Some(v) = &e.value {
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
        let fault = e
            .value
            .as_ref()
            .and_then(|v| v.get("fault"))
            .and_then(Value::as_str)
            .map(|s| s.strip_prefix(':').unwrap_or(s));
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
    use crate::format::Header;

    #[test]
    fn writes_one_op_map_per_line() {
        let mut h = History {
            source: "t".into(),
            header: Header::new("test", "test"),
            ..History::default()
        };
        let mut a = Event::new(Process::Client(0), OpKind::Acquire, Phase::Invoke, 123);
        a.key = Some("lock".into());
        let mut b = Event::new(Process::Client(0), OpKind::Acquire, Phase::Ok, 150);
        b.token = Some(7);
        let mut n = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 160);
        n.value = Some(serde_json::json!({"fault": "pause", "target": "c0"}));
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
