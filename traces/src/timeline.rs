//! The text timeline of a report's offending window: every event from shortly before
//! the first offending operation to shortly after the last, one line each, the
//! offending ones marked, with the nemesis actions that led up to it — who held the
//! lock when, where the fault hit, which sections overlapped, which write was lost.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::check::{fmt_time, Report, Verdict};
use crate::format::{Event, History, OpKind, Phase, Process};

/// Margin shown around the offending operations (ns).
const MARGIN_NS: u64 = 250_000_000;
/// Nemesis actions shown from before the window.
const LEAD_IN: usize = 4;
/// Lines at most.
const MAX_LINES: usize = 60;

fn describe(e: &Event) -> String {
    let mut s = match (e.op, e.phase) {
        (OpKind::Nemesis, _) => {
            let v = e.value.as_ref();
            let fault = v.and_then(|v| v.get("fault")).and_then(Value::as_str).unwrap_or("?");
            let target = v.and_then(|v| v.get("target")).and_then(Value::as_str).unwrap_or("");
            format!("FAULT {fault} {target}")
        }
        (OpKind::Enter, _) => "enters critical section".to_string(),
        (OpKind::Leave, _) => "leaves critical section".to_string(),
        (op, phase) => {
            let op = serde_json::to_value(op)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let phase = match phase {
                Phase::Invoke => "…",
                Phase::Ok => "ok",
                Phase::Fail => "FAILED",
                Phase::Info => "UNKNOWN",
            };
            format!("{op} {phase}")
        }
    };
    if let Some(v) = &e.value {
        if e.op != OpKind::Nemesis {
            s.push_str(&format!(" {v}"));
        }
    }
    if let Some(t) = e.token {
        s.push_str(&format!(" (token {t})"));
    }
    if let Some(n) = &e.note {
        s.push_str(&format!(" — {n}"));
    }
    s
}

/// The timeline of the first violated check of `report`, or `None` when nothing was
/// violated.
pub fn offending_window(history: &History, report: &Report) -> Option<Vec<String>> {
    if report.verdict != Verdict::Violation {
        return None;
    }
    let by_line: BTreeMap<usize, &Event> = history.events.iter().map(|(l, e)| (*l, e)).collect();
    let mut marked: BTreeSet<usize> = BTreeSet::new();
    let mut titles = Vec::new();
    for c in report.checks.iter().filter(|c| c.verdict == Verdict::Violation) {
        titles.push(format!("{}: {}", c.property.name(), c.summary));
        marked.extend(c.ops.iter().map(|o| o.line));
    }
    // Mark each offending operation's completion too, so its whole span shows.
    let mut spans: Vec<u64> = Vec::new();
    for &line in &marked {
        if let Some(e) = by_line.get(&line) {
            spans.push(e.time);
            if let Process::Client(p) = e.process {
                if let Some((_, next)) = history
                    .events
                    .iter()
                    .find(|(l, n)| *l > line && n.process == Process::Client(p) && n.op == e.op)
                {
                    spans.push(next.time);
                }
            }
        }
    }
    let (lo, hi) = (spans.iter().min()?, spans.iter().max()?);
    let (from, to) = (lo.saturating_sub(MARGIN_NS), hi.saturating_add(MARGIN_NS));
    let lead: Vec<&(usize, Event)> = history
        .events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Nemesis && e.time < from)
        .collect();
    let mut lines = titles;
    lines.push(format!("window {} – {}:", fmt_time(from), fmt_time(to)));
    let shown = lead[lead.len().saturating_sub(LEAD_IN)..]
        .iter()
        .copied()
        .chain(history.events.iter().filter(|(_, e)| e.time >= from && e.time <= to));
    let mut count = 0;
    for (line, e) in shown {
        if count == MAX_LINES {
            lines.push("  … (more in the history file)".to_string());
            break;
        }
        let mark = if marked.contains(line) { ">" } else { " " };
        lines.push(format!(
            "{mark} {:>9}  {:<7} {}   [line {line}]",
            fmt_time(e.time),
            e.process.to_string(),
            describe(e)
        ));
        count += 1;
    }
    Some(lines)
}
