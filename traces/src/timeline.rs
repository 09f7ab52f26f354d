//! The text timeline of a report's offending window: every event from shortly before
//! the first offending operation to shortly after the last, one line each, the
//! offending ones marked, with the nemesis actions that led up to it — who held the
//! lock when, where the fault hit, which sections overlapped, which write was lost.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{fmt_time, CheckReport, Property, Report, Verdict};
use crate::format::{Event, History, OpKind, Phase, Process};

/// Margin shown around the offending operations (ns).
const MARGIN_NS: u64 = 250_000_000;
/// Nemesis actions shown from before the window.
const LEAD_IN: usize = 4;
/// Lines at most.
const MAX_LINES: usize = 60;

fn describe(e: &Event) -> String {
    let mut s = match (e.op, e.phase) {
        (OpKind::Nemesis, _) => match e.injected() {
            Some(i) => format!("FAULT {} {}", i.what.name(), i.target()),
            None => "FAULT ? ".to_string(),
        },
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
    if let Some(v) = &e.value_json() {
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

/// Which violated check the window is drawn around: the most concrete first.
const PRIORITY: [Property; 6] = [
    Property::MutualExclusion,
    Property::NoForeignRelease,
    Property::ResourceSafety,
    Property::Fencing,
    Property::LockLinearizability,
    Property::ResourceLinearizability,
];

/// Where an offending operation ends: a section at its `leave`, an invocation at its
/// completion.
fn span_end(history: &History, line: usize, e: &Event) -> u64 {
    let Process::Client(_) = e.process else {
        return e.time;
    };
    let closes = |n: &Event| match e.op {
        OpKind::Enter => n.op == OpKind::Leave,
        _ if e.phase == Phase::Invoke => n.op == e.op,
        _ => false,
    };
    history
        .events
        .iter()
        .find(|(l, n)| *l > line && n.process == e.process && closes(n))
        .map_or(e.time, |(_, n)| n.time)
}

/// The lines of acquire tries that were refused (invocation and `fail`), unless a check
/// names them.
fn refused_tries(history: &History, marked: &BTreeSet<usize>) -> BTreeSet<usize> {
    let mut open: BTreeMap<Process, usize> = BTreeMap::new();
    let mut lines = BTreeSet::new();
    for (line, e) in &history.events {
        if e.op != OpKind::Acquire {
            continue;
        }
        match e.phase {
            Phase::Invoke => {
                open.insert(e.process, *line);
            }
            Phase::Fail => {
                if let Some(inv) = open.remove(&e.process) {
                    if !marked.contains(&inv) && !marked.contains(line) {
                        lines.insert(inv);
                        lines.insert(*line);
                    }
                }
            }
            _ => {
                open.remove(&e.process);
            }
        }
    }
    lines
}

/// The violated checks that quote operations, the most telling first.
fn violated_checks(report: &Report) -> Vec<&CheckReport> {
    PRIORITY
        .iter()
        .filter_map(|p| {
            report
                .checks
                .iter()
                .find(|c| c.property == *p && c.verdict == Verdict::Violation && !c.ops.is_empty())
        })
        .collect()
}

/// From the first to the last moment (ns, the history's clock) of the operations the
/// most telling violated check of `report` quotes: where a random nemesis looks for
/// the faults that were active; `None` when nothing was violated.
pub fn violation_span(history: &History, report: &Report) -> Option<(u64, u64)> {
    let primary = *violated_checks(report).first()?;
    let by_line: BTreeMap<usize, &Event> = history.events.iter().map(|(l, e)| (*l, e)).collect();
    let mut spans: Vec<u64> = Vec::new();
    for o in &primary.ops {
        if let Some(e) = by_line.get(&o.line) {
            spans.push(e.time);
            spans.push(span_end(history, o.line, e));
        }
    }
    Some((*spans.iter().min()?, *spans.iter().max()?))
}

/// The timeline around the most telling violated check of `report` (mutual
/// exclusion first), showing the processes it names and every fault; `None` when
/// nothing was violated.
pub fn offending_window(history: &History, report: &Report) -> Option<Vec<String>> {
    let violated = violated_checks(report);
    let by_line: BTreeMap<usize, &Event> = history.events.iter().map(|(l, e)| (*l, e)).collect();
    let (lo, hi) = violation_span(history, report)?;
    let (from, to) = (lo.saturating_sub(MARGIN_NS), hi.saturating_add(MARGIN_NS));
    // Other checks' operations inside the window are marked too (the lost write
    // inside the overlap, say), and their processes shown.
    let mut marked: BTreeSet<usize> = BTreeSet::new();
    let mut processes: BTreeSet<String> = BTreeSet::new();
    let mut lines = Vec::new();
    for c in &violated {
        let inside: Vec<_> = c
            .ops
            .iter()
            .filter(|o| {
                by_line
                    .get(&o.line)
                    .is_some_and(|e| e.time >= from && e.time <= to)
            })
            .collect();
        if inside.is_empty() {
            continue;
        }
        lines.push(format!("{}: {}", c.property.name(), c.summary));
        for o in inside {
            marked.insert(o.line);
            processes.insert(o.process.clone());
        }
    }
    lines.push(format!(
        "window {} – {}, showing {} and the faults:",
        fmt_time(from),
        fmt_time(to),
        processes.iter().cloned().collect::<Vec<_>>().join(", ")
    ));
    let lead: Vec<&(usize, Event)> = history
        .events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Nemesis && e.time < from)
        .collect();
    let shown = lead[lead.len().saturating_sub(LEAD_IN)..]
        .iter()
        .copied()
        .chain(history.events.iter().filter(|(_, e)| {
            e.time >= from
                && e.time <= to
                // The clients' raw commands are for the one-Redis check, not this story.
                && e.op != OpKind::Command
                && (e.op == OpKind::Nemesis || processes.contains(&e.process.to_string()))
        }));
    // Refused tries fold into one line per run of them: a waiting client makes one
    // every few milliseconds, and the faults and sections must not scroll away.
    let refused = refused_tries(history, &marked);
    // A run of refusals is one line, where it began: (body index, count, first, last).
    let mut runs: Vec<(usize, Process, usize, u64, u64)> = Vec::new();
    let mut open_run: BTreeMap<Process, usize> = BTreeMap::new();
    let mut body: Vec<String> = Vec::new();
    for (line, e) in shown {
        if refused.contains(line) {
            if e.phase != Phase::Invoke {
                match open_run.get(&e.process) {
                    Some(&r) => {
                        runs[r].2 += 1;
                        runs[r].4 = e.time;
                    }
                    None => {
                        open_run.insert(e.process, runs.len());
                        runs.push((body.len(), e.process, 1, e.time, e.time));
                        body.push(String::new());
                    }
                }
            }
            continue;
        }
        open_run.remove(&e.process);
        let mark = if marked.contains(line) { ">" } else { " " };
        body.push(format!(
            "{mark} {:>9}  {:<7} {}   [line {line}]",
            fmt_time(e.time),
            e.process.to_string(),
            describe(e)
        ));
    }
    for (at, p, n, first, last) in runs {
        body[at] = if n == 1 {
            format!(
                "  {:>9}  {:<7} acquire refused (busy)",
                fmt_time(first),
                p.to_string()
            )
        } else {
            format!(
                "  {:>9}  {:<7} acquire refused ×{n} (busy, until {})",
                fmt_time(first),
                p.to_string(),
                fmt_time(last)
            )
        };
    }
    let total = body.len();
    lines.extend(body.into_iter().take(MAX_LINES));
    if total > MAX_LINES {
        lines.push("  … (more in the history file)".to_string());
    }
    Some(lines)
}
