//! The ZooKeeper lock model drawn: a lane per client, the ensemble, and the resource;
//! every request an arrow to the ensemble with its reply, every watch that fires an
//! arrow back to the client it wakes, a session's expiry marked on the ensemble, the
//! lowest lock node and its session's deadline as the ensemble's bar.

use crate::diagram::{
    client, holder_state, resource_lane, resource_state, Arrow, Exchange, Lane, LaneKind, LaneState,
};

use crate::kernel::{LockChecks, WorkStep};

use super::model::{lock_path, Action, Work, ZkLockModel, ZkLockState};
use super::narration::WORDS;
use super::spec::{sequence, ZkState, COUNTER, LOCK_DIR};
use super::text::exchange_text;

/// The ensemble's lane.
const ZK: &str = "zk";

impl ZkLockModel {
    pub(super) fn diagram_lanes(&self, s: &ZkLockState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = (0..s.clients.len())
            .map(|c| Lane::new(client(c), client(c), LaneKind::Client))
            .collect();
        lanes.push(Lane::new(ZK, "ZooKeeper ensemble", LaneKind::Node));
        lanes.push(resource_lane());
        lanes
    }

    /// An arrow from the ensemble to each client whose session of `s` is gone in
    /// `after`, crossed out: the client does not hear it then.
    fn expiry_arrows(s: &ZkLockState, after: &ZkLockState, how: &str) -> Vec<Arrow> {
        s.zk.sessions
            .keys()
            .filter(|id| !after.zk.sessions.contains_key(id))
            .filter_map(|id| {
                Some(Arrow {
                    from: ZK.into(),
                    to: Self::session_lane(s, *id)?,
                    label: format!("✗ session {id} {how}"),
                    reply: None,
                    fault: true,
                    lost: true,
                })
            })
            .collect()
    }

    /// The client lane of a session.
    fn session_lane(s: &ZkLockState, session: u64) -> Option<String> {
        s.clients
            .iter()
            .position(|c| c.session == Some(session))
            .map(client)
    }

    /// The lock node that owns the lock (the lowest sequence under `/lock`), as
    /// `(what, owner lane, session deadline)`.
    fn lowest_node(&self, s: &ZkLockState) -> Option<(String, Option<String>, Option<u64>)> {
        let (name, _) =
            s.zk.children(LOCK_DIR)
                .into_iter()
                .min_by_key(|(n, _)| sequence(n))?;
        let node = s.zk.nodes.get(&lock_path(&name));
        let session = node.and_then(|n| n.ephemeral_owner);
        let lane = session.and_then(|x| Self::session_lane(s, x));
        let until = session
            .and_then(|x| s.zk.sessions.get(&x))
            .map(|x| x.deadline.hi);
        Some((name, lane, until))
    }

    pub(super) fn diagram_states(&self, s: &ZkLockState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| c.process.lane(i, self.phase_words(c).1, None, c.phase))
            .collect();
        let holder = self.lowest_node(s);
        out.push(holder_state(
            ZK,
            format!("zxid {}, {} session(s)", s.zk.zxid, s.zk.sessions.len()),
            holder,
        ));
        let extra = match self.work {
            Work::MultiChecked => Some(format!(
                "{COUNTER} = {}",
                s.zk.nodes.get(COUNTER).map_or("unset", |n| n.data.as_str())
            )),
            Work::Fenced | Work::Outside => s.resource.note(self.work == Work::Fenced),
        };
        out.push(resource_state(&self.in_critical(s), extra));
        out
    }

    /// The watches that fired between `before` and `after`, each an arrow from the
    /// ensemble to the client it wakes.
    fn watch_arrows(s: &ZkLockState, before: &ZkState, after: &ZkState) -> Vec<Arrow> {
        after
            .notified
            .iter()
            .filter(|n| !before.notified.contains(n))
            .filter_map(|n| {
                Some(Arrow {
                    from: ZK.into(),
                    to: Self::session_lane(s, n.session)?,
                    label: format!("watch: {} changed", n.path),
                    reply: None,
                    fault: false,
                    lost: false,
                })
            })
            .collect()
    }

    pub(super) fn diagram_exchange(&self, s: &ZkLockState, a: &Action) -> Exchange {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.as_ref());
        let mark =
            |lane: String, label: &str, fault: bool| Exchange::mark(Some(lane), label, fault);
        let request = |from: String, prefix: &str, fault: bool| match sent {
            Some((cmd, reply)) => {
                // The create names the node it made, so the words come from one place.
                let full = exchange_text(cmd, Some(reply));
                let (sent, got) = full.rsplit_once(" -> ").unwrap_or((full.as_str(), ""));
                Exchange {
                    arrows: vec![Arrow {
                        from,
                        to: ZK.into(),
                        label: format!("{prefix}{sent}"),
                        // A lost reply is drawn with what the server did, never seen.
                        reply: Some(if fault {
                            format!("✗ lost ({got})")
                        } else {
                            got.to_string()
                        }),
                        fault,
                        lost: false,
                    }],
                    marks: Vec::new(),
                }
            }
            None => mark(from, &format!("{prefix}steps"), fault),
        };
        let mut x = match *a {
            Action::Step(c) => {
                let cl = &s.clients[c as usize];
                if sent.is_some() {
                    request(client(c), "", false)
                } else {
                    let after = e
                        .as_ref()
                        .map(|e| (e.state.clients[c as usize].phase, &e.state.resource));
                    let fenced = self.work == Work::Fenced;
                    WorkStep::arrow(c, (cl.phase, &s.resource), after, cl.token, fenced)
                        .unwrap_or_else(|| mark(client(c), "steps", false))
                }
            }
            Action::Ping(c) => request(client(c), "", false),
            Action::Tick => {
                let mut t = Exchange::tick(s.now + 1);
                if let Some(e) = &e {
                    let gone: Vec<String> =
                        s.zk.sessions
                            .keys()
                            .filter(|id| !e.state.zk.sessions.contains_key(id))
                            .map(|id| format!("session {id} expires, its nodes go"))
                            .collect();
                    if !gone.is_empty() {
                        t.marks
                            .extend(mark(ZK.into(), &gone.join("; "), false).marks);
                    }
                    // The crux of every ZooKeeper story: a session expires only while
                    // its client cannot hear the ensemble, so the news never reaches it.
                    t.arrows
                        .extend(Self::expiry_arrows(s, &e.state, "expired: not heard"));
                }
                t
            }
            Action::Suspend(c) => mark(client(c), "SUSPENDED: stops working", false),
            Action::Heal(c) => {
                let lost = e.as_ref().is_some_and(|e| {
                    e.state.clients[c as usize].lost && !s.clients[c as usize].lost
                });
                if lost {
                    mark(client(c), "heals: session LOST, stops", false)
                } else {
                    WORDS.mark(a.client_fault())
                }
            }
            Action::Drop(c) => request(client(c), "⚡ ", true),
            Action::Jump(_) => {
                let mut t = mark(ZK.into(), "⚡ leader's clock leaps ahead", true);
                if let Some(e) = &e {
                    t.arrows.extend(Self::expiry_arrows(
                        s,
                        &e.state,
                        "timed out on the leader's clock",
                    ));
                }
                t
            }
            _ => WORDS.mark(a.client_fault()),
        };
        if let Some(e) = &e {
            x.arrows.extend(Self::watch_arrows(s, &s.zk, &e.state.zk));
        }
        x
    }
}
