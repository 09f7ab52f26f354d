//! The Redis lock model drawn: a lane per client, per node (master, replicas), Sentinel
//! when it may fail over, and the resource; every command an arrow to the master with
//! its reply, replication an arrow from master to replica, a promotion an arrow from
//! Sentinel.

use crate::diagram::{
    client, resource_lane, resource_state, Arrow, Exchange, Lane, LaneKind, LaneState,
};
use crate::kernel::LockChecks;
use crate::redis::spec::{RedisState, Value};
use crate::redis::text::{command_text, reply_text};
use crate::registry::Fault;

use super::keys::LOCK_KEY;
use super::model::{Action, Phase, RedisLockModel, RedisLockState};
use super::narration::{phase_words, WORDS};

/// The lane id of node `i`.
pub(crate) fn node(i: impl std::fmt::Display) -> String {
    format!("redis{i}")
}

/// The lock key a node stores at `now`, in a few characters, and its deadline.
pub(crate) fn held(db: &RedisState, now: u64) -> Option<(String, Option<u64>)> {
    let e = db.live(LOCK_KEY, now)?;
    let v = match &e.value {
        Value::Str(s) => s.clone(),
        Value::Hash(h) => h
            .iter()
            .map(|(f, n)| format!("{f}×{n}"))
            .collect::<Vec<_>>()
            .join(","),
    };
    Some((v, e.deadline.map(|d| d.lo)))
}

impl RedisLockModel {
    pub(super) fn diagram_lanes(&self, s: &RedisLockState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = (0..s.clients.len())
            .map(|c| Lane::new(client(c), client(c), LaneKind::Client))
            .collect();
        lanes.extend((0..s.nodes.len()).map(|i| Lane::new(node(i), node(i), LaneKind::Node)));
        if self.faults.has(Fault::Failover) {
            lanes.push(Lane::new("sentinel", "Sentinel", LaneKind::Agent));
        }
        lanes.push(resource_lane());
        lanes
    }

    pub(super) fn diagram_states(&self, s: &RedisLockState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.process
                    .lane(i, phase_words(c).1, c.lease_until.get(), c.phase)
            })
            .collect();
        for (i, n) in s.nodes.iter().enumerate() {
            let role = match super::narration::node_role(s, i) {
                "replica" if !n.stream.is_empty() => format!("replica, {} behind", n.stream.len()),
                role => role.to_string(),
            };
            let key = held(&n.db, s.now);
            out.push(LaneState {
                lane: node(i),
                status: role,
                lease_until: key.as_ref().and_then(|k| k.1),
                holds: key.map(|k| k.0),
                owner: n.creator.map(client),
                critical: false,
                impaired: !n.up,
                ..LaneState::default()
            });
        }
        let inside = self.in_critical(s);
        let counter = self.fencing.then(|| s.resource.counter(true));
        out.push(resource_state(&inside, counter));
        out
    }

    pub(super) fn diagram_exchange(&self, s: &RedisLockState, a: &Action) -> Exchange {
        let e = self.effect(s, a);
        let master = node(s.master);
        if let Some((cmd, reply)) = e.as_ref().and_then(|e| e.sent.as_ref()) {
            let (Action::Step(c) | Action::Renew(c)) = *a else {
                return Exchange::default();
            };
            // To the node the client reaches: across a split, the isolated old master.
            let to = RedisLockModel::target(s, c as usize).map_or(master, node);
            let mut x = Exchange::arrow(client(c), to, command_text(cmd), Some(reply_text(reply)));
            if matches!(a, Action::Renew(_)) {
                x.arrows[0].label = format!("watchdog: {}", x.arrows[0].label);
            }
            return x;
        }
        let mark =
            |lane: String, label: String, fault: bool| Exchange::mark(Some(lane), label, fault);
        match *a {
            Action::Step(c) => {
                let cl = &s.clients[c as usize];
                let after = e.as_ref().map(|e| e.state.clients[c as usize].phase);
                let accepted = e
                    .as_ref()
                    .is_some_and(|e| e.state.resource.accepted > s.resource.accepted);
                match (cl.phase, after) {
                    (Phase::Idle, _) => mark(client(c), format!("reads clock: {}", s.now), false),
                    (Phase::Critical(0), Some(Phase::Critical(1))) => Exchange::arrow(
                        client(c),
                        "resource",
                        format!("read (token {})", cl.token),
                        Some(format!("{}", s.resource.value)),
                    ),
                    (Phase::Critical(_), Some(Phase::Release(_))) if self.fencing => {
                        Exchange::arrow(
                            client(c),
                            "resource",
                            format!("write {} (token {})", cl.read.saturating_add(1), cl.token),
                            Some(
                                if accepted {
                                    "ok"
                                } else {
                                    "refused: stale token"
                                }
                                .into(),
                            ),
                        )
                    }
                    (Phase::Critical(_), _) => mark(client(c), "leaves".into(), false),
                    _ => mark(client(c), "steps".into(), false),
                }
            }
            Action::Renew(c) => mark(client(c), "watchdog".into(), false),
            Action::Tick => {
                let mut t = Exchange::tick(s.now + 1);
                // A lease running out is the crux of the pause rows: the key goes, and
                // Redis tells nobody.
                if let Some(e) = &e {
                    for (i, n) in s.nodes.iter().enumerate() {
                        let after = e.state.nodes.get(i).and_then(|n| held(&n.db, e.state.now));
                        if held(&n.db, s.now).is_some() && after.is_none() {
                            let whose = n.creator.map_or(String::new(), |c| format!("c{c}'s "));
                            t.marks.push(crate::diagram::Mark {
                                lane: Some(node(i)),
                                label: format!("{whose}key expires: nobody told"),
                                fault: false,
                            });
                        }
                    }
                }
                t
            }
            Action::Replicate(r) => {
                let what = s.nodes[r as usize]
                    .stream
                    .first()
                    .map(|(cmd, _, _)| command_text(cmd))
                    .unwrap_or_default();
                Exchange::arrow(master, node(r), format!("replicate: {what}"), None)
            }
            Action::Failover(r) => Exchange {
                arrows: Self::failover_arrows(s, r),
                marks: vec![crate::diagram::Mark {
                    lane: Some(master),
                    label: if s.split.is_some() {
                        "cut off: still master on its side".into()
                    } else {
                        "demoted".into()
                    },
                    fault: true,
                }],
            },
            Action::Heal(c) => mark(client(c), "partition heals".into(), false),
            Action::Split(c) => Exchange {
                arrows: Vec::new(),
                marks: vec![
                    crate::diagram::Mark {
                        lane: Some(master),
                        label: format!("⚡ cut off (with c{c}) from Sentinel and replicas"),
                        fault: true,
                    },
                    crate::diagram::Mark {
                        lane: Some(client(c)),
                        label: format!("⚡ cut off: reaches only redis{}", s.master),
                        fault: true,
                    },
                ],
            },
            _ => WORDS.mark(a.client_fault()),
        }
    }

    /// A failover's arrows: the promotion; the writes the promoted replica never got,
    /// drawn from the old master crossed out (the lesson of `redis-failover`); and the
    /// clients Sentinel redirects to the new master.
    fn failover_arrows(s: &RedisLockState, r: u8) -> Vec<Arrow> {
        let arrow = |from: String, to: String, label: String, lost: bool| Arrow {
            from,
            to,
            label,
            reply: None,
            fault: true,
            lost,
        };
        let redirect = |c: usize| Arrow {
            fault: false,
            ..arrow(
                "sentinel".into(),
                client(c),
                format!("master is now {}", node(r)),
                false,
            )
        };
        let mut out = vec![arrow(
            "sentinel".into(),
            node(r),
            "⚡ promote to master".into(),
            false,
        )];
        out.extend(s.nodes[r as usize].stream.iter().map(|(cmd, _, _)| {
            arrow(
                node(s.master),
                node(r),
                format!("✗ never replicated: {}", command_text(cmd)),
                true,
            )
        }));
        // Across a split the cut-off client stays with the old master.
        let pinned = s.split.map(|sp| sp.client as usize);
        out.extend(
            (0..s.clients.len())
                .filter(|&c| Some(c) != pinned)
                .map(redirect),
        );
        out
    }
}
