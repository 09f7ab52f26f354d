//! Mutual exclusion: the critical sections of different clients never overlap in time.
//! Each lock key guards its own critical section: holding one lock while another
//! client holds another is no overlap.
//!
//! Critical sections come from `enter`/`leave` events when the history has them, else
//! from each grant to the holder's next release (or, for a non-reentrant lock, its next
//! acquire). All times come from one monotonic clock,
//! so an overlap of the recorded intervals is a proof that two clients were inside at
//! once. A section that never ends is only known to last until that client's last
//! recorded event: later it may have crashed, so it is not stretched further.
//!
//! A section closed by a `leave` that failed was rolled back whole (the transaction of
//! a transactional lock, ended by the server): nothing it did took effect, so it
//! excluded no one and is left out.

use std::collections::HashMap;

use crate::format::{OpKind, Phase, Process};
use crate::ops::{Outcome, Paired};

use super::{fmt_time, CheckReport, OpRef, Property, Verdict};

/// A critical section of one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The client.
    pub process: u32,
    /// When it entered (ns).
    pub start: u64,
    /// When it left, or its last event if it never did (ns).
    pub end: u64,
    /// Whether a `leave` (or release) closed it.
    pub closed: bool,
    /// The line that opened it.
    pub line: usize,
    /// The line that closed it.
    pub end_line: Option<usize>,
    /// The fencing token it held, when known.
    pub token: Option<u64>,
    /// The lock it was held under (the grant's or the marker's key).
    pub key: Option<String>,
}

/// Whether the history marks its critical sections itself (`enter`/`leave`).
pub fn has_markers(paired: &Paired) -> bool {
    paired.points.iter().any(|(_, e)| e.op == OpKind::Enter)
}

/// Whether the history says anything about critical sections.
pub fn applies(paired: &Paired) -> bool {
    has_markers(paired)
        || paired
            .ops
            .iter()
            .any(|o| o.kind == OpKind::Acquire && o.outcome == Outcome::Ok)
}

/// Where a section opens or closes: (time, line, process, opens?, token, lock key,
/// rolled back?).
type Mark<'a> = (u64, usize, u32, bool, Option<u64>, Option<&'a str>, bool);

/// The critical sections of a history.
pub fn sections(paired: &Paired, reentrant: bool) -> Vec<Section> {
    let mut last_seen: HashMap<u32, u64> = HashMap::new();
    let mut see = |p: u32, t: u64| {
        let e = last_seen.entry(p).or_insert(t);
        *e = (*e).max(t);
    };
    for (_, e) in &paired.points {
        if let Process::Client(p) = e.process {
            see(p, e.time);
        }
    }
    for op in &paired.ops {
        see(op.process, op.call());
        if let Some((_, c)) = &op.completion {
            see(op.process, c.time);
        }
    }

    let explicit = paired.points.iter().any(|(_, e)| e.op == OpKind::Enter);
    let mut marks: Vec<Mark> = Vec::new();
    if explicit {
        for (line, e) in &paired.points {
            if let (Process::Client(p), OpKind::Enter | OpKind::Leave) = (e.process, e.op) {
                let opens = e.op == OpKind::Enter;
                let void = e.op == OpKind::Leave && e.phase == Phase::Fail;
                marks.push((e.time, *line, p, opens, e.token, e.key.as_deref(), void));
            }
        }
    } else {
        for op in &paired.ops {
            let key = op.key();
            match (op.kind, op.outcome) {
                (OpKind::Acquire, Outcome::Ok) => {
                    if let Some((line, c)) = &op.completion {
                        marks.push((c.time, *line, op.process, true, op.token(), key, false));
                    }
                }
                (OpKind::Release, _) => {
                    marks.push((op.call(), op.line(), op.process, false, None, key, false))
                }
                // Asking again for a lock it does not hold again means the client no
                // longer believes it holds it.
                (OpKind::Acquire, _) if !reentrant => {
                    marks.push((op.call(), op.line(), op.process, false, None, key, false))
                }
                _ => {}
            }
        }
    }
    marks.sort_by_key(|m| (m.0, m.1));

    // Per process and lock: depth of nesting (reentrant sections) and the open section.
    let mut open: HashMap<(u32, Option<&str>), (u32, Section)> = HashMap::new();
    let mut done = Vec::new();
    for (time, line, p, opens, token, key, void) in marks {
        if opens {
            let entry = open.entry((p, key)).or_insert_with(|| {
                (
                    0,
                    Section {
                        process: p,
                        start: time,
                        end: time,
                        closed: false,
                        line,
                        end_line: None,
                        token,
                        key: key.map(str::to_string),
                    },
                )
            });
            entry.0 += 1;
            continue;
        }
        // A `leave` that names no lock closes the client's one open section.
        let mut mine = open.keys().filter(|(q, _)| *q == p).copied();
        let which = match (open.contains_key(&(p, key)), key, mine.next(), mine.next()) {
            (true, ..) => (p, key),
            (false, None, Some(only), None) => only,
            _ => continue,
        };
        if let Some((depth, mut s)) = open.remove(&which) {
            if depth > 1 {
                open.insert(which, (depth - 1, s));
            } else if !void {
                s.end = time;
                s.closed = true;
                s.end_line = Some(line);
                done.push(s);
            }
        }
    }
    for ((p, _), (_, mut s)) in open {
        s.end = last_seen.get(&p).copied().unwrap_or(s.start).max(s.start);
        done.push(s);
    }
    done.sort_by_key(|s| (s.start, s.process));
    done
}

/// Checks mutual exclusion.
pub fn check(paired: &Paired, reentrant: bool) -> CheckReport {
    let secs = sections(paired, reentrant);
    let mut overlaps: Vec<(usize, usize)> = Vec::new();
    for i in 0..secs.len() {
        for j in i + 1..secs.len() {
            if secs[j].start >= secs[i].end {
                break;
            }
            if secs[i].process != secs[j].process
                && secs[i].key == secs[j].key
                && secs[j].start < secs[i].end
            {
                overlaps.push((i, j));
            }
        }
    }
    let n = secs.len();
    let Some(&(i, j)) = overlaps.first() else {
        return CheckReport::new(
            Property::MutualExclusion,
            Verdict::Ok,
            format!("{n} critical sections, none overlapping"),
        )
        .stat("sections", n)
        .stat("overlaps", 0);
    };
    let (a, b) = (&secs[i], &secs[j]);
    let overlap = a.end.min(b.end) - b.start;
    let describe = |s: &Section| {
        let end = match (s.closed, s.end_line) {
            (true, Some(l)) => format!("left at {} (line {l})", fmt_time(s.end)),
            _ => format!(
                "never left; still inside at its last event, {}",
                fmt_time(s.end)
            ),
        };
        let token = s.token.map(|t| format!(", token {t}")).unwrap_or_default();
        format!(
            "c{} entered at {} (line {}){token}, {end}",
            s.process,
            fmt_time(s.start),
            s.line
        )
    };
    let mut report = CheckReport::new(
        Property::MutualExclusion,
        Verdict::Violation,
        format!(
            "c{} and c{} were in their critical sections at the same time for {:.3} ms",
            a.process,
            b.process,
            overlap as f64 / 1e6
        ),
    )
    .stat("sections", n)
    .stat("overlaps", overlaps.len());
    report.explanation = vec![
        describe(a),
        describe(b),
        format!(
            "both inside from {} to {}",
            fmt_time(b.start),
            fmt_time(a.end.min(b.end))
        ),
    ];
    if overlaps.len() > 1 {
        report
            .explanation
            .push(format!("{} overlapping pairs in all", overlaps.len()));
    }
    report.ops = [a, b]
        .iter()
        .map(|s| OpRef {
            line: s.line,
            process: format!("c{}", s.process),
            description: "enter critical section".to_string(),
        })
        .collect();
    report
}
