//! The Redlock model told in words: clients with the nodes they hold, nodes with their
//! key, clock offset or downtime, and why two clients came to hold a majority each.

use crate::check::{happened, Narrate};
use crate::diagram::{Exchange, Lane, LaneState};
use crate::kernel::FaultWords;
use crate::redis::spec::entry_text;
use crate::redis::LOCK_KEY;
use crate::registry::Property;

use super::model::{RedlockModel, RedlockState, RlAction, RlPhase};

/// How the client faults read: only a pause strikes Redlock's clients.
pub(super) const WORDS: FaultWords = FaultWords {
    pause: " (GC)",
    pause_mark: " (GC)",
    crash: "",
    servers: "the nodes",
    heartbeats: "commands",
    alive: "its connections stay open",
    alive_mark: "connections stay open",
};

/// Client `c`'s phase in words: on its story line (naming the nodes it holds), and
/// (shorter, counting them) on its diagram lane.
pub(super) fn phase_words(s: &RedlockState, c: usize) -> (String, String) {
    let bit = 1u8 << c;
    let got: Vec<String> = s
        .nodes
        .iter()
        .filter(|n| n.got & bit != 0)
        .map(|n| format!("redis{}", n.name))
        .collect();
    let (n, all) = (got.len(), s.nodes.len());
    let cl = &s.clients[c];
    match cl.phase {
        RlPhase::Acquiring => (
            format!("acquiring since t={}, has [{}]", cl.t0, got.join(", ")),
            format!("acquiring {n}/{all}"),
        ),
        RlPhase::Critical => (
            format!(
                "IN CRITICAL SECTION (holds [{}]), valid until t={}",
                got.join(", "),
                cl.lease_until.unwrap_or(0)
            ),
            format!("inside ({n}/{all})"),
        ),
        RlPhase::Done => ("done".to_string(), "done".to_string()),
    }
}

impl Narrate for RedlockModel {
    fn describe_state(&self, s: &RedlockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let (what, _) = phase_words(s, i);
            lines.push(format!("c{i}: {what}{}", c.process.tags()));
        }
        for n in &s.nodes {
            let state = match n.down_since {
                Some(t) => format!("DOWN since t={t} (data lost)"),
                None => format!(
                    "lock={}",
                    entry_text(&n.server.db, LOCK_KEY, s.now + n.offset)
                ),
            };
            let clock = if n.offset > 0 {
                format!(", clock +{}", n.offset)
            } else {
                String::new()
            };
            let cut = if n.cut != 0 {
                format!(", cut off from {}", client_names(n.cut))
            } else {
                String::new()
            };
            lines.push(format!("redis{}: {state}{clock}{cut}", n.name));
        }
        lines
    }

    fn describe_action(&self, s: &RedlockState, a: &RlAction) -> String {
        let name = |i: u8| s.nodes.get(i as usize).map_or(i, |n| n.name);
        match *a {
            RlAction::Send(c, i) => {
                let after = self.apply(s, a);
                let ok = after.is_some_and(|n| n.nodes[i as usize].got & (1 << c) != 0);
                if s.nodes[i as usize].cut & (1 << c) != 0 {
                    return format!(
                        "c{c}: {} to redis{} is lost in the partition (times out)",
                        self.step_text(c, false, s.now),
                        name(i)
                    );
                }
                format!(
                    "c{c}: {} on redis{} -> {}",
                    self.step_text(c, false, s.now),
                    name(i),
                    if ok { "OK" } else { "(nil)/error" }
                )
            }
            RlAction::Decide(c) => {
                let held = self
                    .apply(s, a)
                    .is_some_and(|n| n.clients[c as usize].phase == RlPhase::Critical);
                if held {
                    format!(
                        "c{c} has a {} and positive validity: it enters the critical section",
                        self.quorum_word()
                    )
                } else {
                    format!(
                        "c{c} has no {} (or no validity left): releases everywhere",
                        self.quorum_word()
                    )
                }
            }
            RlAction::Leave(c) => format!("c{c} leaves and releases everywhere"),
            RlAction::Again(c) => format!("c{c} asks for the lock again"),
            RlAction::Tick => format!("time passes to t={}", s.now + 1),
            RlAction::Crash(i) if self.persistent => format!(
                "redis{} is killed; its keys are in its append-only file",
                name(i)
            ),
            RlAction::Crash(i) => format!(
                "redis{} crashes; without persistence its keys are gone",
                name(i)
            ),
            RlAction::Restart(i) if self.persistent => format!(
                "redis{} restarts and loads its append-only file: its keys are back",
                name(i)
            ),
            RlAction::Restart(i) => format!("redis{} restarts, empty", name(i)),
            RlAction::Jump(i) => format!("redis{}'s clock jumps {} ahead", name(i), self.ttl),
            RlAction::Split(nodes, clients) => {
                format!("the network splits: {}", sides(s, nodes, clients))
            }
            RlAction::Heal => "the partition heals".into(),
            RlAction::Pause(_) | RlAction::Resume(_) => WORDS.story(a.client_fault()),
        }
    }

    fn lanes(&self, s: &RedlockState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &RedlockState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &RedlockState) -> Option<u64> {
        Some(s.now)
    }

    fn exchange(&self, s: &RedlockState, a: &RlAction) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, a: &RlAction) -> bool {
        a.client_fault().is_some_and(|(f, _)| f.is_fault())
            || matches!(
                a,
                RlAction::Crash(_) | RlAction::Jump(_) | RlAction::Split(..)
            )
    }

    fn why(&self, _: Property, path: &[(Option<RlAction>, RedlockState)]) -> String {
        let has = |f: fn(&RlAction) -> bool| happened(path, f);
        if has(|a| matches!(a, RlAction::Crash(_))) {
            "A node in the first client's majority restarted without its data; the second client counted it as free and reached its own majority: two holders.".into()
        } else if has(|a| matches!(a, RlAction::Jump(_))) {
            "A node's clock jumped ahead and expired the first client's key early; the second client counted it and reached its own majority: two holders.".into()
        } else if has(|a| matches!(a, RlAction::Pause(_))) {
            "The holder paused past its validity; its keys expired on every node and another client acquired a majority while it still believed it held the lock (Redlock tokens cannot fence).".into()
        } else if self.quorum.is_some_and(|q| 2 * q <= self.nodes) {
            format!(
                "Two quorums of {} of {} nodes need not share a node: each client won its own, without any fault (any two majorities share one, which grants only once).",
                self.quorum.unwrap_or(0),
                self.nodes
            )
        } else if self.protocol.is_some() {
            "Each client's acquire was granted on a quorum of nodes: nothing in the per-node step keeps a second client out.".into()
        } else {
            "Two clients hold a majority at once.".into()
        }
    }
}

/// `c0, c2` for the clients of bit mask `bits`.
fn client_names(bits: u8) -> String {
    let names: Vec<String> = (0..8)
        .filter(|c| bits & (1 << c) != 0)
        .map(|c| format!("c{c}"))
        .collect();
    names.join(", ")
}

/// The two sides of a split, as [`crate::kernel::split::sides`] tells them.
pub(super) fn sides(s: &RedlockState, nodes: u8, clients: u8) -> String {
    let node_names: Vec<String> = s.nodes.iter().map(|n| format!("redis{}", n.name)).collect();
    let client_names: Vec<String> = (0..s.clients.len()).map(|c| format!("c{c}")).collect();
    crate::kernel::split::sides(&node_names, nodes.into(), &client_names, clients.into())
}
