//! The etcd lock model drawn: a lane per client, the cluster (one linearizable
//! keyspace, whichever member leads), an operator when leases are revoked, and the
//! resource; every request an arrow to the cluster with its reply, a lease's expiry
//! and a leader change marked on the cluster, the lock key's lease as its bar.

use crate::diagram::{
    client, holder_state, resource_lane, resource_state, Exchange, Lane, LaneKind, LaneState,
};
use crate::kernel::{ClientPhase, LockChecks, WorkStep};
use crate::registry::Fault;

use super::model::{owner, Action, EtcdLockModel, EtcdLockState, Lock, Work};
use super::narration::{phase_words, WORDS};
use super::spec::{COUNTER_KEY, LOCK_KEY, LOCK_PREFIX};
use super::text::{command_text, reply_text};

/// The cluster's lane.
const ETCD: &str = "etcd";
/// The operator's lane (lease revokes).
const OPERATOR: &str = "operator";

impl EtcdLockModel {
    pub(super) fn diagram_lanes(&self, s: &EtcdLockState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = (0..s.clients.len())
            .map(|c| Lane::new(client(c), client(c), LaneKind::Client))
            .collect();
        let label = if self.faults.has(Fault::Failover) {
            "etcd cluster (3 members)"
        } else {
            "etcd"
        };
        lanes.push(Lane::new(ETCD, label, LaneKind::Node));
        if self.faults.has(Fault::Revoke) {
            lanes.push(Lane::new(OPERATOR, "operator", LaneKind::Agent));
        }
        lanes.push(resource_lane());
        lanes
    }

    /// The key that owns the lock on the server, as `(what, owner lane, lease expiry)`:
    /// the single `lock` key, or the recipe's key with the lowest create revision.
    fn owning_key(&self, s: &EtcdLockState) -> Option<(String, Option<String>, Option<u64>)> {
        let (key, kv) = match self.lock {
            Lock::SingleKey { .. } | Lock::Described(_) => s.etcd.keys.get_key_value(LOCK_KEY)?,
            Lock::Recipe | Lock::LockRpc { .. } => s
                .etcd
                .keys
                .iter()
                .filter(|(k, _)| k.starts_with(LOCK_PREFIX))
                .min_by_key(|(_, kv)| kv.create_rev)?,
        };
        let lane = (0..s.clients.len())
            .find(|&c| owner(c) == kv.value)
            .map(client);
        let until = kv
            .lease
            .and_then(|l| s.etcd.leases.get(&l))
            .map(|l| l.deadline.hi);
        Some((format!("{key} @rev {}", kv.create_rev), lane, until))
    }

    pub(super) fn diagram_states(&self, s: &EtcdLockState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| c.process.lane(i, phase_words(c).1, None, c.phase))
            .collect();
        let holder = self.owning_key(s);
        out.push(holder_state(
            ETCD,
            format!("rev {}, {} lease(s)", s.etcd.revision, s.etcd.leases.len()),
            holder,
        ));
        if self.faults.has(Fault::Revoke) {
            out.push(LaneState {
                lane: OPERATOR.into(),
                status: "etcdctl".into(),
                ..LaneState::default()
            });
        }
        let extra = match self.work {
            Work::TxnGuarded => Some(format!(
                "{COUNTER_KEY} = {}",
                s.etcd
                    .keys
                    .get(COUNTER_KEY)
                    .map_or("unset", |kv| kv.value.as_str())
            )),
            Work::Fenced | Work::Outside => s.resource.note(self.work == Work::Fenced),
        };
        out.push(resource_state(&self.in_critical(s), extra));
        out
    }

    pub(super) fn diagram_exchange(&self, s: &EtcdLockState, a: &Action) -> Exchange {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.as_ref());
        let mark =
            |lane: String, label: String, fault: bool| Exchange::mark(Some(lane), label, fault);
        let request = |from: String, prefix: &str, fault: bool, lost: bool| match sent {
            Some((cmd, reply)) => {
                // A lost reply is drawn with what the server did, never seen.
                let got = if lost {
                    format!("✗ lost ({})", reply_text(reply))
                } else {
                    reply_text(reply)
                };
                let mut x = Exchange::arrow(
                    from,
                    ETCD,
                    format!("{prefix}{}", command_text(cmd)),
                    Some(got),
                );
                if let Some(arrow) = x.arrows.first_mut() {
                    arrow.fault = fault;
                }
                x
            }
            None => mark(from, format!("{prefix}steps"), fault),
        };
        match *a {
            Action::Step(c) => {
                let cl = &s.clients[c as usize];
                if sent.is_some() {
                    let by = if matches!(self.lock, Lock::LockRpc { .. }) && cl.phase.waiting() {
                        "[Lock RPC, server side] "
                    } else {
                        ""
                    };
                    return request(client(c), by, false, false);
                }
                let after = e
                    .as_ref()
                    .map(|e| (e.state.clients[c as usize].phase, &e.state.resource));
                let fenced = self.work == Work::Fenced;
                WorkStep::arrow(c, (cl.phase, &s.resource), after, cl.my_rev, fenced)
                    .unwrap_or_else(|| mark(client(c), "steps".into(), false))
            }
            Action::KeepAlive(c) => request(client(c), "keep-alive: ", false, false),
            Action::Tick => {
                let gone: Vec<String> = e
                    .as_ref()
                    .map(|e| {
                        s.etcd
                            .leases
                            .keys()
                            .filter(|l| !e.state.etcd.leases.contains_key(l))
                            .map(|l| format!("lease {l:x} expires"))
                            .collect()
                    })
                    .unwrap_or_default();
                if gone.is_empty() {
                    Exchange::tick(s.now + 1)
                } else {
                    let mut x = Exchange::tick(s.now + 1);
                    x.marks
                        .extend(Exchange::mark(Some(ETCD.into()), gone.join("; "), false).marks);
                    // A lease ends only when its keep-alives stopped arriving: its
                    // holder is paused or cut off and is not told.
                    if let Some(e) = &e {
                        x.arrows.extend(
                            s.etcd
                                .leases
                                .keys()
                                .filter(|l| !e.state.etcd.leases.contains_key(l))
                                .filter_map(|l| {
                                    let c = s.clients.iter().position(|c| c.lease == Some(*l))?;
                                    Some(crate::diagram::Arrow {
                                        from: ETCD.into(),
                                        to: client(c),
                                        label: format!("✗ lease {l:x} expired: not heard"),
                                        reply: None,
                                        fault: true,
                                        lost: true,
                                    })
                                }),
                        );
                    }
                    x
                }
            }
            Action::Drop(c) => request(client(c), "⚡ ", true, true),
            Action::Revoke(c) => {
                request(OPERATOR.into(), &format!("⚡ c{c}'s lease: "), true, false)
            }
            Action::Failover => mark(
                ETCD.into(),
                "⚡ leader killed; new leader restarts lease TTLs".into(),
                true,
            ),
            _ => WORDS.mark(a.client_fault()),
        }
    }
}
