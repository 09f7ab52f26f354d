//! The lanes of a real run, drawn from its recorded history: each client's operations
//! and the commands it sent to each server with their replies, the nemesis's faults,
//! who was inside the critical section and until when each client believed it held the
//! lock. A run has thousands of events, so one window is drawn: around the operations a
//! violated check names (drawn red: the overlap, the lost write), else around the first
//! fault; refused tries (busy `SET NX`, failed acquires) are counted, not drawn.

use std::collections::{BTreeMap, BTreeSet};

use locklab_models::diagram::{
    client_state, resource_lane, resource_state, Arrow, Exchange, Lane, LaneKind, LaneState, Mark,
    Scene,
};
use serde_json::Value;

use crate::check::{Report, Verdict};
use crate::format::{
    Backend, ClientStep, CommandValue, Event, History, Injected, OpKind, Phase, Process, What,
};

/// Time before the first drawn event and after the last, so the lead-up shows.
const MARGIN_NS: u64 = 250_000_000;
/// A fault this close before the window is pulled into it: it is usually the cause.
const LEAD_NS: u64 = 3_000_000_000;
/// At most this many rows.
const MAX_ROWS: usize = 60;

/// One drawn event.
pub struct RunRow {
    /// The event in words.
    pub title: String,
    /// When, in ms since the run started.
    pub at_ms: u64,
    /// When, on the history's own clock (ns, or a logical count: see
    /// [`RunDiagram::logical`]).
    pub at: u64,
    /// Whether it is the nemesis's event (a fault or a heal), which the page draws in the
    /// fault colour.
    pub fault: bool,
    /// The client lane whose event it is (`None`: the nemesis's).
    pub who: Option<String>,
    /// What it shows.
    pub scene: Scene,
}

/// The run's diagram.
pub struct RunDiagram {
    /// Clients, servers, the nemesis, the resource.
    pub lanes: Vec<Lane>,
    /// The events drawn.
    pub rows: Vec<RunRow>,
    /// The window drawn (ns since the run started).
    pub window: (u64, u64),
    /// The history's times are positions, not nanoseconds (an imported history
    /// without real times, such as Porcupine's logs): rows show `t=N`, not `0 ms`.
    pub logical: bool,
    /// Why this window.
    pub why: String,
    /// Events in the window left out: refused tries, invocations, rows past the limit.
    pub hidden: usize,
}

fn client_id(p: Process) -> Option<String> {
    p.client().map(|c| format!("c{c}"))
}

fn op_name(op: OpKind) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A nemesis event's fault and target as a label names them (a target that is no
/// text, in an imported history, as its JSON).
fn fault_words(i: &Option<Injected>) -> (String, String) {
    i.as_ref().map_or_else(Default::default, |i| {
        let target = match &i.target {
            Some(t) => t.clone(),
            None => i.rest.get("target").map(short).unwrap_or_default(),
        };
        (i.what.name(), target)
    })
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The command and its reply in the words of its backend's spec; a command the backend
/// has no words for is drawn as its raw values.
fn command_words(backend: Backend, c: &CommandValue) -> (String, Option<String>) {
    crate::backend::words(backend, c).map_or_else(
        || {
            (
                short(&c.command),
                Some(c.reply.as_ref().map_or_else(|| "no reply".into(), short)),
            )
        },
        |(cmd, reply)| (cmd, Some(reply.unwrap_or_else(|| "no reply".into()))),
    )
}

/// A try that got nothing: a refused or unanswered acquire, a busy or unanswered
/// command. Clients retry these in loops; drawn, they would bury the story.
fn refused(e: &Event) -> bool {
    match e.op {
        OpKind::Acquire => matches!(e.phase, Phase::Fail | Phase::Info),
        OpKind::Command => e
            .value
            .as_ref()
            .and_then(|v| v.parse::<CommandValue>().ok())
            .is_some_and(|c| c.reply.as_ref().is_none_or(|r| r == "nil")),
        _ => false,
    }
}

/// The window: around the first violated check's operations, else the first fault.
fn window(history: &History, report: &Report) -> (u64, u64, String) {
    let times: BTreeMap<usize, u64> = history.events.iter().map(|(l, e)| (*l, e.time)).collect();
    let end = history.events.last().map_or(0, |(_, e)| e.time);
    let violated = report
        .checks
        .iter()
        .find(|c| c.verdict == Verdict::Violation && !c.ops.is_empty());
    let (lo, hi, why) = match violated {
        Some(c) => {
            let ts: Vec<u64> = c
                .ops
                .iter()
                .filter_map(|o| times.get(&o.line).copied())
                .collect();
            let lo = ts.iter().min().copied().unwrap_or(0);
            let hi = ts.iter().max().copied().unwrap_or(lo);
            (lo, hi, format!("{}: {}", c.property.name(), c.summary))
        }
        None => match history.events.iter().find(|(_, e)| e.op == OpKind::Nemesis) {
            Some((_, e)) => (
                e.time,
                e.time + 4 * MARGIN_NS,
                "the first fault and what followed".into(),
            ),
            None => (
                0,
                4 * MARGIN_NS,
                "the start of the run (no fault, no violation)".into(),
            ),
        },
    };
    let lead = history
        .events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Nemesis && e.time <= lo && lo - e.time <= LEAD_NS)
        .map(|(_, e)| e.time)
        .next_back();
    let from = lead.unwrap_or(lo).saturating_sub(MARGIN_NS);
    (from, hi.saturating_add(MARGIN_NS).min(end.max(hi)), why)
}

/// What the clients believe and do, replayed up to each event.
#[derive(Default)]
struct Tracker {
    inside: BTreeSet<u32>,
    lease_ns: BTreeMap<u32, u64>,
    until_ms: BTreeMap<u32, u64>,
    /// Clients a `client-partition` cut off and no `client-heal` has healed yet.
    cut: BTreeSet<u32>,
}

impl Tracker {
    fn apply(&mut self, e: &Event) {
        if e.op == OpKind::Nemesis {
            let Some(i) = e.injected() else { return };
            let cut = i.what.client_step().and_then(ClientStep::cuts_off);
            match (cut, i.client_target()) {
                (Some(true), Some(c)) => {
                    self.cut.insert(c);
                }
                (Some(false), Some(c)) => {
                    self.cut.remove(&c);
                }
                (Some(_), None) | (None, _) => {}
            }
            return;
        }
        let Some(c) = e.process.client() else { return };
        match (e.op, e.phase) {
            (OpKind::Acquire | OpKind::Renew, Phase::Invoke) => {
                if let Some(l) = e.lease_ns {
                    self.lease_ns.insert(c, l);
                }
            }
            (OpKind::Acquire | OpKind::Renew, Phase::Ok) => {
                if let Some(l) = self.lease_ns.get(&c) {
                    self.until_ms.insert(c, (e.time + l) / 1_000_000);
                }
            }
            (OpKind::Release, Phase::Ok | Phase::Fail | Phase::Info) => {
                self.until_ms.remove(&c);
            }
            (OpKind::Enter, _) => {
                self.inside.insert(c);
            }
            (OpKind::Leave, _) => {
                self.inside.remove(&c);
            }
            _ => {}
        }
    }

    fn states(&self, clients: &BTreeSet<u32>) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = clients
            .iter()
            .map(|c| {
                let inside = self.inside.contains(c);
                let cut = self.cut.contains(c);
                LaneState {
                    cut,
                    ..client_state(
                        c,
                        match (inside, cut) {
                            (true, true) => "inside, cut off",
                            (true, false) => "inside",
                            (false, true) => "cut off",
                            (false, false) => "",
                        },
                        self.until_ms.get(c).copied(),
                        inside,
                        cut,
                    )
                }
            })
            .collect();
        let inside: Vec<usize> = self.inside.iter().map(|c| *c as usize).collect();
        out.push(resource_state(&inside, None));
        out
    }
}

/// The run's diagram from its history and the checks' report.
pub fn run_diagram(history: &History, report: &Report) -> RunDiagram {
    let (from, to, why) = window(history, report);
    let offending: BTreeSet<usize> = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation)
        .flat_map(|c| c.ops.iter().map(|o| o.line))
        .collect();
    let in_window: Vec<&(usize, Event)> = history
        .events
        .iter()
        .filter(|(_, e)| e.time >= from && e.time <= to)
        .collect();
    let clients: BTreeSet<u32> = in_window
        .iter()
        .filter_map(|(_, e)| e.process.client())
        .collect();
    let backend = history.header.backend;
    // Command events are written when their reply comes; draw everything in time order.
    let mut ordered: Vec<&(usize, Event)> = history.events.iter().collect();
    ordered.sort_by_key(|(line, e)| (e.time, *line));
    // The servers the window's commands reached, each its own lane, in the order they
    // were first reached: through a failover, the old master and the new one.
    let mut servers: Vec<Lane> = Vec::new();
    let mut reach = Reach::new(history, backend);
    for (_, e) in &ordered {
        reach.apply(e);
        if e.time < from || e.time > to || e.op != OpKind::Command {
            continue;
        }
        if let Some(cv) = e
            .value
            .as_ref()
            .and_then(|v| v.parse::<CommandValue>().ok())
        {
            let lane = reach.lane(cv.node);
            if !servers.iter().any(|l| l.id == lane.id) {
                servers.push(lane);
            }
        }
    }
    let mut lanes: Vec<Lane> = clients
        .iter()
        .map(|c| Lane::new(format!("c{c}"), format!("c{c}"), LaneKind::Client))
        .collect();
    // Lanes only for what the window has: a key-value history has no lock, a run
    // without faults no nemesis.
    let has = |f: &dyn Fn(OpKind) -> bool| in_window.iter().any(|(_, e)| f(e.op));
    let lock_ops = has(&|op| matches!(op, OpKind::Acquire | OpKind::Release | OpKind::Renew));
    let lock_lane = servers.is_empty();
    if lock_lane && lock_ops {
        lanes.push(Lane::new(
            "lock",
            format!("{backend} (lock)"),
            LaneKind::Node,
        ));
    }
    lanes.extend(servers);
    if has(&|op| op == OpKind::Nemesis) {
        lanes.push(Lane::new("nemesis", "nemesis", LaneKind::Agent));
    }
    lanes.push(resource_lane());

    let mut tracker = Tracker::default();
    let mut candidates: Vec<(Rank, RunRow)> = Vec::new();
    let mut hidden = 0;
    let mut reach = Reach::new(history, backend);
    for (line, e) in ordered {
        tracker.apply(e);
        reach.apply(e);
        if e.time < from || e.time > to {
            continue;
        }
        let skip = refused(e) || (e.phase == Phase::Invoke && e.op != OpKind::Nemesis);
        if skip {
            hidden += 1;
            continue;
        }
        let bad = offending.contains(line);
        let Some(exchange) = draw(e, bad, lock_lane, &reach, &lanes) else {
            hidden += 1;
            continue;
        };
        let who = e.process.to_string();
        // A fault says what it did, not "nemesis Info".
        let what = match e.op {
            OpKind::Nemesis => {
                let (name, target) = fault_words(&e.injected());
                format!("⚡ {name} {target}").trim_end().to_string()
            }
            op => format!("{} {:?}", op_name(op), e.phase),
        };
        let title = match &e.note {
            Some(n) => format!("{who}: {what} — {n}"),
            None => format!("{who}: {what}"),
        };
        candidates.push((
            rank(e, bad),
            RunRow {
                title: if bad { format!("✗ {title}") } else { title },
                at_ms: e.time / 1_000_000,
                at: e.time,
                fault: e.op == OpKind::Nemesis,
                who: client_id(e.process),
                scene: Scene {
                    now: Some(e.time / 1_000_000),
                    exchange,
                    lanes: tracker.states(&clients),
                },
            },
        ));
    }
    let keep = select(&candidates.iter().map(|(r, _)| *r).collect::<Vec<_>>());
    hidden += candidates.len() - keep.len();
    let rows: Vec<RunRow> = candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, (_, row))| row)
        .collect();
    RunDiagram {
        lanes,
        rows,
        window: (from, to),
        // Imported times that all fit in 10 ms are the importer's line numbers.
        logical: backend == Backend::Imported
            && history
                .events
                .last()
                .is_none_or(|(_, e)| e.time < 10_000_000),
        why,
        hidden,
    }
}

/// How much a row matters to the story, most first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// An operation a check names, or a fault.
    Cause,
    /// A lock operation's outcome, entering or leaving, the resource's reads and writes.
    Step,
    /// A command to a server (waiters poll: most of a run's rows).
    Detail,
}

fn rank(e: &Event, bad: bool) -> Rank {
    match e.op {
        _ if bad => Rank::Cause,
        OpKind::Nemesis => Rank::Cause,
        OpKind::Command => Rank::Detail,
        _ => Rank::Step,
    }
}

/// Which of the window's rows to draw, at most [`MAX_ROWS`]: the causes first, then
/// the steps, then the commands, each class nearest the causes first — so a window
/// whose causes lie seconds apart (a pause, then the second grant) shows both ends
/// rather than the first 60 rows of waiters polling.
fn select(ranks: &[Rank]) -> BTreeSet<usize> {
    if ranks.len() <= MAX_ROWS {
        return (0..ranks.len()).collect();
    }
    let causes: Vec<usize> = (0..ranks.len())
        .filter(|&i| ranks[i] == Rank::Cause)
        .collect();
    let distance = |i: usize| causes.iter().map(|&c| c.abs_diff(i)).min().unwrap_or(i);
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| (ranks[i], distance(i), i));
    order.into_iter().take(MAX_ROWS).collect()
}

fn phase_word(p: Phase) -> &'static str {
    match p {
        Phase::Invoke => "…",
        Phase::Ok => "ok",
        Phase::Fail => "fail",
        Phase::Info => "unknown",
    }
}

/// Which server each client endpoint reaches, as the history tells it: the header
/// names what each endpoint reaches at the start, and a failover's nemesis event
/// (`{"fault":"failover","target":"replica1","endpoint":0}`) moves the endpoint that
/// follows Sentinel (endpoint 0 in histories that do not say) to the promoted server.
struct Reach {
    backend: Backend,
    now: Vec<String>,
}

impl Reach {
    fn new(history: &History, backend: Backend) -> Self {
        Reach {
            backend,
            now: history.header.endpoints.clone(),
        }
    }

    fn apply(&mut self, e: &Event) {
        let Some(i) = e.injected() else { return };
        let endpoint = match i.what {
            What::Failover { endpoint } => endpoint,
            What::Client { .. }
            | What::LostReply
            | What::Protocol { .. }
            | What::Skipped
            | What::Server(_) => return,
        };
        let Some(target) = i.target else { return };
        let endpoint = endpoint.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
        if let Some(slot) = self.now.get_mut(endpoint) {
            *slot = target;
        }
    }

    /// The lane of the server endpoint `node` reaches now.
    fn lane(&self, node: usize) -> Lane {
        match self.now.get(node) {
            Some(name) => Lane::new(format!("server:{name}"), name.clone(), LaneKind::Node),
            None => Lane::new(
                format!("node{node}"),
                format!("{} node {node}", self.backend),
                LaneKind::Node,
            ),
        }
    }
}

/// One event as a message or a mark; `lock_lane`: lock operations are drawn as
/// messages to one lock lane (no command events to show the servers). A failover is
/// drawn as the nemesis promoting the server, when that server has a lane.
fn draw(e: &Event, bad: bool, lock_lane: bool, reach: &Reach, lanes: &[Lane]) -> Option<Exchange> {
    let backend = reach.backend;
    let mark = |lane: String, label: String, fault: bool| Exchange {
        arrows: Vec::new(),
        marks: vec![Mark {
            lane: Some(lane),
            label,
            fault,
        }],
    };
    if e.op == OpKind::Nemesis {
        let i = e.injected();
        let (name, target) = fault_words(&i);
        let promoted = format!("server:{target}");
        let failover = match i.map(|i| i.what) {
            Some(What::Failover { .. }) => true,
            Some(
                What::Client { .. }
                | What::LostReply
                | What::Protocol { .. }
                | What::Skipped
                | What::Server(_),
            )
            | None => false,
        };
        if failover && lanes.iter().any(|l| l.id == promoted) {
            return Some(Exchange {
                arrows: vec![Arrow {
                    from: "nemesis".into(),
                    to: promoted,
                    label: "⚡ failover: promoted to master".into(),
                    reply: None,
                    fault: true,
                    lost: false,
                }],
                marks: Vec::new(),
            });
        }
        return Some(mark(
            "nemesis".into(),
            format!("⚡ {name} {target}").trim().to_string(),
            true,
        ));
    }
    let c = client_id(e.process)?;
    let arrow = |to: String, label: String, reply: Option<String>| Exchange {
        arrows: vec![Arrow {
            from: c.clone(),
            to,
            label,
            reply,
            fault: bad,
            lost: false,
        }],
        marks: Vec::new(),
    };
    let token = e.token.map_or(String::new(), |t| format!(" (token {t})"));
    Some(match e.op {
        OpKind::Command => {
            let cv: CommandValue = e.value.as_ref()?.parse().ok()?;
            let (cmd, reply) = command_words(backend, &cv);
            arrow(reach.lane(cv.node).id, cmd, reply)
        }
        OpKind::Enter => mark(c.clone(), "enters".into(), bad),
        OpKind::Leave => mark(c.clone(), "leaves".into(), bad),
        OpKind::Acquire | OpKind::Release | OpKind::Renew if lock_lane => arrow(
            "lock".into(),
            op_name(e.op),
            Some(format!("{}{token}", phase_word(e.phase))),
        ),
        OpKind::Acquire | OpKind::Release | OpKind::Renew => mark(
            c.clone(),
            format!("{} {}{token}", op_name(e.op), phase_word(e.phase)),
            bad,
        ),
        op => {
            let v = e
                .value_json()
                .map_or(String::new(), |v| format!(" {}", short(&v)));
            arrow(
                "resource".into(),
                format!("{}{v}{token}", op_name(op)),
                Some(phase_word(e.phase).into()),
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_window_keeps_both_far_causes_and_the_steps_before_the_polls() {
        // A pause at row 5, 500 rows of waiters polling, the second grant at row 505.
        let mut ranks = vec![Rank::Detail; 600];
        ranks[5] = Rank::Cause;
        ranks[505] = Rank::Cause;
        for i in [4, 6, 504, 506, 507] {
            ranks[i] = Rank::Step;
        }
        let kept = select(&ranks);
        assert_eq!(kept.len(), MAX_ROWS);
        for i in [4, 5, 6, 504, 505, 506, 507] {
            assert!(kept.contains(&i), "row {i} dropped");
        }
        // The commands kept are those beside the causes, not the first 60.
        assert!(kept.contains(&503) && !kept.contains(&250));
    }
}
