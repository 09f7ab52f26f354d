//! The etcd lock model told in words: each client, the keyspace and leases, the
//! resource, every request as `etcdctl` would spell it with its reply, and the closing
//! line that says why a property broke.

use crate::check::{happened, pair, Narrate};
use crate::diagram::{Exchange, Lane, LaneState};
use crate::kernel::{ClientPhase, FaultWords, LockChecks, WorkStep};
use crate::registry::Property;
use crate::resource::LOST_UPDATE;

use super::model::{Action, Client, EtcdLockModel, EtcdLockState, Lock, Phase, Work};
use super::text::{command_text, reply_text, state_lines};

/// How the client faults read: a pause stops the keep-alives, a partition loses them.
pub(super) const WORDS: FaultWords = FaultWords {
    pause: " (GC / SIGSTOP): its keep-alives stop too",
    pause_mark: " (keep-alives too)",
    crash: " (kill -9)",
    servers: "the cluster",
    heartbeats: "keep-alives",
    alive: "its keep-alives go on",
    alive_mark: "keep-alives go on",
};

/// A client's phase in words: on its story line, and (shorter) on its diagram lane.
pub(super) fn phase_words(c: &Client) -> (String, &'static str) {
    let (story, lane) = match c.phase {
        Phase::Grant => ("starting its session", "starting session"),
        Phase::Create => ("acquiring", "acquiring"),
        Phase::Acquire(0) => ("acquiring", "acquiring"),
        Phase::Acquire(k) => {
            return (format!("acquiring (step {})", k + 1), "acquiring");
        }
        Phase::Unlock(_) => ("releasing", "releasing"),
        Phase::Wait => {
            let behind = format!("queued behind create revision {}", c.my_rev);
            return (behind, "queued");
        }
        Phase::Check => ("checking its key", "checking its key"),
        Phase::Critical(_) => ("IN CRITICAL SECTION", "inside"),
        Phase::Release => ("releasing", "releasing"),
        Phase::Retry => ("retrying its release", "retrying release"),
        Phase::Done if c.lost => ("gave up (session expired)", "gave up"),
        Phase::Done => ("done", "done"),
        Phase::Crashed => ("CRASHED", "crashed"),
    };
    (story.to_string(), lane)
}

impl Narrate for EtcdLockModel {
    fn describe_state(&self, s: &EtcdLockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let (what, _) = phase_words(c);
            let lease = c
                .lease
                .map(|l| format!(", lease {l:x}"))
                .unwrap_or_default();
            let token = if c.my_rev > 0 && matches!(self.lock, Lock::Described(_)) {
                format!(", its put at revision {} ({{rev}})", c.my_rev)
            } else if c.my_rev > 0 && c.phase.holding() {
                format!(", key {} created at revision {}", self.my_key(c), c.my_rev)
            } else {
                String::new()
            };
            let tags = c.process.tags();
            lines.push(format!("c{i}: {what}{lease}{token}{tags}"));
        }
        lines.extend(state_lines(&s.etcd));
        if matches!(self.work, Work::Outside | Work::Fenced) && s.resource.accepted > 0
            || self.work == Work::Fenced
        {
            lines.push(s.resource.describe());
        }
        lines
    }

    fn describe_action(&self, s: &EtcdLockState, a: &Action) -> String {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.clone());
        let said = |who: String| match &sent {
            Some((cmd, reply)) => {
                format!("{who}: {} -> {}", command_text(cmd), reply_text(reply))
            }
            None => who,
        };
        match *a {
            Action::Step(c) => {
                let cl = &s.clients[c as usize];
                let after = e.map(|e| e.state.clients[c as usize].phase);
                let by = if self.rpc_queued(cl.phase) {
                    format!("etcd's Lock RPC for c{c}")
                } else {
                    format!("c{c}")
                };
                let fenced = self.work == Work::Fenced;
                match (&sent, WorkStep::of(cl.phase, after)) {
                    (Some(_), _) => said(by),
                    (None, Some(w)) => w.story(c, cl.my_rev, fenced, "writes the resource"),
                    (None, None) if cl.phase == Phase::Done => {
                        format!("c{c} asks for the lock again")
                    }
                    (None, None) => format!("c{c} steps"),
                }
            }
            Action::KeepAlive(c) => said(format!("c{c}'s session")),
            Action::Tick => {
                let expired: Vec<String> = e
                    .map(|e| {
                        s.etcd
                            .leases
                            .keys()
                            .filter(|l| !e.state.etcd.leases.contains_key(l))
                            .map(|l| {
                                let keys: Vec<&str> = s
                                    .etcd
                                    .keys
                                    .iter()
                                    .filter(|(_, kv)| kv.lease == Some(*l))
                                    .map(|(k, _)| k.as_str())
                                    .collect();
                                if keys.is_empty() {
                                    format!("lease {l:x} expires")
                                } else {
                                    format!("lease {l:x} expires, etcd deletes {}", keys.join(", "))
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut t = format!("time passes to t={}", s.now + 1);
                for x in expired {
                    t.push_str("; ");
                    t.push_str(&x);
                }
                t
            }
            Action::Drop(c) => said(format!("c{c} (reply lost)")),
            Action::Revoke(c) => said(format!("operator revokes queued c{c}'s lease")),
            Action::Failover if self.leader_cut => {
                "the leader is cut off from the other members: it cannot commit, and they elect a new leader, which restarts every lease's TTL".to_string()
            }
            Action::Failover => {
                "the leader is killed; the new leader restarts every lease's TTL".to_string()
            }
            _ => WORDS.story(a.client_fault()),
        }
    }

    fn lanes(&self, s: &EtcdLockState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &EtcdLockState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &EtcdLockState) -> Option<u64> {
        Some(s.now)
    }

    fn exchange(&self, s: &EtcdLockState, a: &Action) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, a: &Action) -> bool {
        a.client_fault().is_some_and(|(f, _)| f.is_fault())
            || matches!(a, Action::Drop(_) | Action::Failover | Action::Revoke(_))
    }

    fn why(&self, property: Property, path: &[(Option<Action>, EtcdLockState)]) -> String {
        let partitioned = happened(path, |a| matches!(a, Action::Partition(_)));
        let dropped = happened(path, |a| matches!(a, Action::Drop(_)));
        let last = path.last().map(|(_, s)| s);
        let pair = pair(&last.map(|s| self.in_critical(s)).unwrap_or_default());
        if matches!(self.lock, Lock::Described(_)) {
            return self.described_why(property, path);
        }
        match property {
            // Judged on histories only: no model states them.
            Property::LockLinearizability | Property::ResourceLinearizability | Property::Fencing => {
                format!("{property} is judged on histories, not by this model.")
            }
            Property::MutualExclusion if dropped => format!(
                "The release's reply was lost and the retry deleted `lock` by name: by then it was the next holder's key, so a third client created its own: {pair} are inside together."
            ),
            Property::MutualExclusion if partitioned => format!(
                "The holder was cut off from the cluster: its keep-alives never arrived, its lease expired and etcd deleted its key, while the holder, hearing nothing, worked on: {pair} are inside together."
            ),
            Property::MutualExclusion
                if matches!(self.lock, Lock::LockRpc { check_own_key: false }) =>
            {
                format!(
                    "The queued waiter's lease was revoked and etcd deleted its key, yet the Lock RPC granted it once the keys before it went, without checking its own was still there: {pair} are inside together."
                )
            }
            Property::MutualExclusion => format!(
                "The holder paused past its lease TTL; its keep-alives stopped with it, the lease expired, etcd deleted its key, and the next waiter's key became the lowest: {pair} are inside together (Jepsen's lock-set)."
            ),
            Property::NoForeignRelease => {
                let c = last.and_then(|s| s.foreign_release).unwrap_or(0);
                format!(
                    "c{c}'s release reply was lost; its retried `del lock` deleted the key another client had created since."
                )
            }
            Property::Liveness => {
                let what = last
                    .and_then(|s| self.orphan(s))
                    .unwrap_or_else(|| "a key".to_string());
                if last.is_some_and(|s| s.clients.iter().any(|c| c.process.hung)) {
                    return format!(
                        "The holder's worker hung inside its section, but the client's keep-alive task runs on its own: the lease is renewed for ever, so nothing will delete {what}, and every waiter is stuck behind a holder that will never release. A lease proves the process is alive, not that its work is."
                    );
                }
                format!("Nothing will delete {what} while a client waits for it.")
            }
            Property::ResourceSafety => {
                LOST_UPDATE
                    .to_string()
            }
            Property::Reentrancy => "A re-entry was refused.".to_string(),
        }
    }
}

impl EtcdLockModel {
    /// The step is the server's, queueing a `Lock` RPC.
    fn rpc_queued(&self, phase: Phase) -> bool {
        matches!(self.lock, Lock::LockRpc { .. }) && phase.waiting()
    }
}
