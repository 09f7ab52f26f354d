//! The Redlock model drawn: a lane per client, per independent node and the resource;
//! every `SET NX PX` an arrow to one node with its reply, releases arrows to every node
//! the client held, crashes and clock jumps marked on their node.

use crate::diagram::{
    client, resource_lane, resource_state, Arrow, Exchange, Lane, LaneKind, LaneState,
};
use crate::redis::diagram::{held, node};

use super::model::{RedlockModel, RedlockState, RlAction, RlPhase};
use super::narration::{phase_words, WORDS};

impl RedlockModel {
    pub(super) fn diagram_lanes(&self, s: &RedlockState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = (0..s.clients.len())
            .map(|c| Lane::new(client(c), client(c), LaneKind::Client))
            .collect();
        lanes.extend(
            s.nodes
                .iter()
                .map(|n| Lane::new(node(n.name), node(n.name), LaneKind::Node)),
        );
        lanes.push(resource_lane());
        lanes
    }

    pub(super) fn diagram_states(&self, s: &RedlockState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.process
                    .lane(i, &phase_words(s, i).1, c.lease_until, c.phase)
            })
            .collect();
        for n in &s.nodes {
            let local = s.now + n.offset;
            // The key's deadline is on the node's clock; the page draws real time.
            let key = n
                .down_since
                .is_none()
                .then(|| held(&n.server.db, local))
                .flatten();
            let status = match (n.down_since, n.offset) {
                (Some(t), _) => format!("down since t={t}, data lost"),
                (None, 0) => "up".to_string(),
                (None, o) => format!("clock +{o}"),
            };
            out.push(LaneState {
                lane: node(n.name),
                status,
                lease_until: key
                    .as_ref()
                    .and_then(|k| k.1)
                    .map(|d| d.saturating_sub(n.offset)),
                holds: key.map(|k| k.0),
                owner: n.server.creator.map(client),
                critical: false,
                impaired: n.down_since.is_some(),
                ..LaneState::default()
            });
        }
        let inside: Vec<usize> = (0..s.clients.len())
            .filter(|&c| s.clients[c].phase == RlPhase::Critical)
            .collect();
        out.push(resource_state(&inside, None));
        out
    }

    pub(super) fn diagram_exchange(&self, s: &RedlockState, a: &RlAction) -> Exchange {
        let name = |i: u8| node(s.nodes.get(i as usize).map_or(i, |n| n.name));
        let mark =
            |lane: String, label: String, fault: bool| Exchange::mark(Some(lane), label, fault);
        match *a {
            RlAction::Send(c, i) => {
                let ok = self
                    .apply(s, a)
                    .is_some_and(|n| n.nodes[i as usize].got & (1 << c) != 0);
                let down = s.nodes[i as usize].down_since.is_some();
                let cut = s.nodes[i as usize].cut & (1 << c) != 0;
                let reply = match (ok, down, cut) {
                    (true, ..) => "OK",
                    (false, _, true) => "✂ lost in the partition (timeout)",
                    (false, true, false) => "(error) connection refused",
                    (false, false, false) => "(nil)",
                };
                Exchange::arrow(
                    client(c),
                    name(i),
                    self.step_text(c, false, s.now),
                    Some(reply.into()),
                )
            }
            RlAction::Decide(c) => {
                let held = self
                    .apply(s, a)
                    .is_some_and(|n| n.clients[c as usize].phase == RlPhase::Critical);
                if held {
                    mark(client(c), format!("{}: enters", self.quorum_word()), false)
                } else {
                    self.releases(s, c, &format!("no {}: releases", self.quorum_word()))
                }
            }
            RlAction::Leave(c) => self.releases(s, c, "leaves, releases"),
            RlAction::Again(c) => mark(client(c), "asks again".into(), false),
            RlAction::Tick => Exchange::tick(s.now + 1),
            RlAction::Crash(i) if self.persistent => {
                mark(name(i), "⚡ killed, keys in its AOF".into(), true)
            }
            RlAction::Crash(i) => mark(name(i), "⚡ crashes, keys lost".into(), true),
            RlAction::Restart(i) if self.persistent => {
                mark(name(i), "restarts from its AOF".into(), false)
            }
            RlAction::Restart(i) => mark(name(i), "restarts empty".into(), false),
            RlAction::Jump(i) => mark(name(i), format!("⚡ clock jumps +{}", self.ttl), true),
            RlAction::Split(nodes, clients) => {
                let sides = super::narration::sides(s, nodes, clients);
                Exchange::mark(None, format!("⚡ network split: {sides}"), true)
            }
            RlAction::Heal => Exchange::mark(None, "partition healed", false),
            RlAction::Pause(_) | RlAction::Resume(_) => WORDS.mark(a.client_fault()),
        }
    }

    /// A release: a compare-and-delete to every node the client tried.
    fn releases(&self, s: &RedlockState, c: u8, what: &str) -> Exchange {
        let bit = 1u8 << c;
        let arrows = s
            .nodes
            .iter()
            .filter(|n| n.tried & bit != 0 && n.down_since.is_none() && n.cut & bit == 0)
            .map(|n| Arrow {
                from: client(c),
                to: node(n.name),
                label: self.step_text(c, true, s.now),
                reply: None,
                fault: false,
                lost: false,
            })
            .collect();
        Exchange {
            arrows,
            marks: vec![crate::diagram::Mark {
                lane: Some(client(c)),
                label: what.into(),
                fault: false,
            }],
        }
    }
}
