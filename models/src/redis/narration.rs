//! The Redis lock model told in words: each client, node and the resource as one line,
//! every action as what a reader would see on the wire, and the closing line that says
//! why a property broke.

use crate::check::{encode, happened, pair, Narrate, Symmetry};
use crate::diagram::{Exchange, Lane, LaneState};
use crate::kernel::{belief, FaultWords, LockChecks};
use crate::redis::text::{command_text, entry_text, reply_text};
use crate::registry::Property;
use crate::resource::LOST_UPDATE;

use super::keys::{FENCE_KEY, LOCK_KEY};
use super::model::{Action, Client, Phase, RedisLockModel, RedisLockState};
use super::protocol::{self, Protocol, ValueKind};

/// How the client faults read: a pause stops the watchdog with the client.
pub(super) const WORDS: FaultWords = FaultWords {
    pause: " (GC / stop-the-world)",
    pause_mark: " (GC)",
    crash: "",
    servers: "the master",
    heartbeats: "watchdog renewals",
    alive: "its watchdog renewals go on",
    alive_mark: "watchdog goes on",
};

/// A client's phase in words: on its story line, and (shorter) on its diagram lane.
pub(super) fn phase_words(c: &Client) -> (String, &'static str) {
    let (story, lane) = match c.phase {
        Phase::Idle => ("idle", "idle"),
        Phase::Acquire(0) => ("acquiring", "acquiring"),
        Phase::Acquire(k) => return (format!("acquiring (step {})", k + 1), "acquiring"),
        Phase::Wait => ("waiting for WAIT", "WAIT"),
        Phase::Fence => ("taking a fencing token", "fencing"),
        Phase::Critical(_) => ("IN CRITICAL SECTION", "inside"),
        Phase::Release(_) => ("releasing", "releasing"),
        Phase::Done => ("done", "done"),
        Phase::Crashed => ("CRASHED", "crashed"),
    };
    (story.to_string(), lane)
}

/// A node's role in words: master, replica, the isolated old master of a split brain,
/// or a master Sentinel demoted.
pub(super) fn node_role(s: &RedisLockState, i: usize) -> &'static str {
    let n = &s.nodes[i];
    let isolated = s.split.is_some_and(|x| x.node as usize == i);
    match (isolated, n.up, i == s.master as usize) {
        (true, true, _) => "master, cut off",
        (true, false, _) => "old master, cut off: still grants on its side",
        (false, false, _) => "demoted",
        (false, true, true) => "master",
        (false, true, false) => "replica",
    }
}

/// No symmetry: clients hold distinct values and nodes distinct roles. Encoding the
/// state itself spares the default's clone of every generated state.
impl Symmetry for RedisLockModel {
    fn encode_canonical(&self, s: &RedisLockState, out: &mut Vec<u8>) {
        encode(s, out);
    }
}

impl Narrate for RedisLockModel {
    fn describe_state(&self, s: &RedisLockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let (what, _) = phase_words(c);
            let token = self.fencing.then_some(c.token).filter(|t| *t > 0);
            let belief = belief(c.lease_until.get(), token);
            let tags = c.process.tags();
            lines.push(format!("c{i}: {what}{belief}{tags}"));
        }
        for (i, n) in s.nodes.iter().enumerate() {
            let role = node_role(s, i);
            let creator = n
                .creator
                .map(|c| format!(" (set by c{c})"))
                .unwrap_or_default();
            let pending = if n.stream.is_empty() {
                String::new()
            } else {
                format!(", {} write(s) not yet replicated", n.stream.len())
            };
            let fence = if self.fencing {
                format!(", fence={}", entry_text(&n.db, FENCE_KEY, s.now))
            } else {
                String::new()
            };
            lines.push(format!(
                "redis{i} ({role}): lock={}{creator}{fence}{pending}",
                entry_text(&n.db, LOCK_KEY, s.now)
            ));
        }
        if self.fencing {
            lines.push(s.resource.describe());
        }
        lines
    }

    fn describe_action(&self, s: &RedisLockState, a: &Action) -> String {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.clone());
        let cmd = |c: u8| match &sent {
            Some((cmd, reply)) => format!("c{c}: {} -> {}", command_text(cmd), reply_text(reply)),
            None => String::new(),
        };
        match *a {
            Action::Step(c) => {
                let before = s.clients[c as usize].phase;
                let after = e.map(|e| e.state.clients[c as usize].phase);
                match (before, after, &sent) {
                    (_, _, Some(_)) => cmd(c),
                    (Phase::Idle, _, _) => format!("c{c} reads its clock: value \"{}\"", s.now),
                    (Phase::Done, _, _) => format!("c{c} asks for the lock again"),
                    (Phase::Critical(0), Some(Phase::Critical(1)), _) => {
                        format!(
                            "c{c} reads the resource with token {}",
                            s.clients[c as usize].token
                        )
                    }
                    (Phase::Critical(_), Some(Phase::Release(_)), _) if self.fencing => {
                        format!(
                            "c{c} writes the resource with token {}",
                            s.clients[c as usize].token
                        )
                    }
                    (Phase::Critical(_), _, _) => format!("c{c} leaves the critical section"),
                    _ => format!("c{c} steps"),
                }
            }
            Action::Renew(c) => format!("c{c}'s watchdog: {}", cmd(c)),
            Action::Tick => format!("time passes to t={}", s.now + 1),
            Action::Replicate(r) => format!("redis{r} applies a replicated write"),
            Action::Failover(r) => match s.split {
                Some(x) => format!(
                    "Sentinel, unable to reach redis{} for {} tick(s), promotes replica redis{r} to master; the clients on its side are redirected to it — redis{}, cut off, still acts as master for c{}",
                    x.node, self.down_after, x.node, x.client
                ),
                None => format!(
                    "Sentinel promotes replica redis{r} to master; clients are redirected to it"
                ),
            },
            Action::Heal(_) => match s.split {
                Some(x) if x.node != s.master => format!(
                    "the partition heals: Sentinel turns redis{} into a replica of redis{}, whose full sync wipes what it granted alone; c{} is redirected to redis{}",
                    x.node, s.master, x.client, s.master
                ),
                _ => format!(
                    "the partition heals: the replicas resynchronise from the master redis{}",
                    s.master
                ),
            },
            Action::Split(c) => format!(
                "⚡ a partition cuts the master redis{} and c{c} off from the Sentinels, the replicas and the other clients; both sides run on, nothing crashed",
                s.master
            ),
            _ => WORDS.story(a.client_fault()),
        }
    }

    fn lanes(&self, s: &RedisLockState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &RedisLockState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &RedisLockState) -> Option<u64> {
        Some(s.now)
    }

    fn exchange(&self, s: &RedisLockState, a: &Action) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, a: &Action) -> bool {
        a.client_fault().is_some_and(|(f, _)| f.is_fault())
            || matches!(a, Action::Failover(_) | Action::Split(_))
    }

    fn why(&self, property: Property, path: &[(Option<Action>, RedisLockState)]) -> String {
        let failover = happened(path, |a| matches!(a, Action::Failover(_)));
        let split = happened(path, |a| matches!(a, Action::Split(_)));
        let paused = happened(path, |a| matches!(a, Action::Pause(_)));
        let crashed = happened(path, |a| matches!(a, Action::Crash(_)));
        let last = path.last().map(|(_, s)| s);
        let pair = pair(&last.map(|s| self.in_critical(s)).unwrap_or_default());
        if property == Property::MutualExclusion && split && failover {
            let old = last.and_then(|s| s.split).map_or(0, |x| x.node);
            let lag = match self.min_replicas_lag {
                Some(l) => format!(
                    " min-replicas-max-lag let redis{old} accept writes for {l} tick(s) after the cut, and a lock granted then runs for its whole lease."
                ),
                None => String::new(),
            };
            return format!(
                "Split brain: redis{old}, cut off with a client, went on granting the lock while Sentinel promoted a replica on the other side; two masters each granted it, so {pair} both hold the lock — and no process crashed.{lag}"
            );
        }
        if let Protocol::Described(_) = self.protocol {
            // A user's steps: say what the path shows, not what a catalog row's
            // protocol would mean by it.
            return match property {
                Property::MutualExclusion if failover => format!(
                    "The replica was promoted before the lock's write reached it, so the first holder's lock never existed on the new master; {pair} both hold the lock."
                ),
                Property::MutualExclusion if paused => format!(
                    "The holder paused past its lease; the lock expired while it was still inside, and another client acquired it: {pair} are in the critical section together."
                ),
                Property::MutualExclusion => format!(
                    "The protocol's steps let a second client in while the first was inside: {pair} are in the critical section together."
                ),
                Property::NoForeignRelease => {
                    let c = last.and_then(|s| s.foreign_release).unwrap_or(0);
                    format!("c{c}'s release step changed a lock another client had set.")
                }
                Property::Liveness => match last.and_then(|s| s.refused_free) {
                    Some(c) => format!(
                        "The master held no key at all, yet c{c}'s acquire was refused: this lock turns clients away when nobody holds it."
                    ),
                    None => "The holder crashed while its lock had no lease; nothing will ever free it, so the waiting client can never acquire.".into(),
                },
                Property::Reentrancy => "A re-entry was refused, or the lock was freed while a hold was still counted.".to_string(),
                _ => format!("{property} was violated."),
            };
        }
        let hung = last.is_some_and(|s| s.clients.iter().any(|c| c.process.hung));
        let nested = self.reenters && !protocol::reentrant(self.protocol);
        match property {
            Property::Reentrancy if nested => "The holder called lock() again inside its section: SET NX refused it, the key being its own, so the nested call waits for the lock its own caller holds — without a TTL for ever (a deadlock with no crash), with one until its own lease runs out.".to_string(),
            Property::MutualExclusion if nested => format!(
                "The holder's nested lock() waited for its own key, and a holder that waits cannot finish within its lease: the key expired while the outer call was still inside, and another client took the lock: {pair} are inside together."
            ),
            Property::Liveness if hung => "The holder's worker hung inside its section, but the watchdog is a timer of its own in the same live process: it renews the lease every third of it, for ever, so the key never expires and every other client retries for ever. The watchdog proves the process is alive, not that the work is; only an explicit lease (lock(leaseTime)) or a deadline on the work frees it.".to_string(),
            Property::MutualExclusion if failover => format!(
                "The replica was promoted before the SET reached it, so the first holder's lock never existed on the new master; {pair} both hold the lock."
            ),
            Property::MutualExclusion if self.protocol == Protocol::Redisson && self.value == ValueKind::ThreadId => format!(
                "Both processes call their thread \"t1\": the second one's lock script found its own field and re-entered the other's lock; {pair} are inside together."
            ),
            Property::MutualExclusion if paused => format!(
                "The holder paused past its TTL; the key expired while it was still inside, and another client acquired it: {pair} are in the critical section together."
            ),
            Property::MutualExclusion => format!(
                "Checking and setting the lock are two commands; both clients saw it free before either set it, so {pair} are inside together."
            ),
            Property::NoForeignRelease => {
                let c = last.and_then(|s| s.foreign_release).unwrap_or(0);
                match (self.protocol, self.value) {
                    (_, ValueKind::Timestamp) => format!(
                        "Both clients took their value from the same millisecond, so c{c}'s compare-and-delete matched a lock that was not its own and deleted it."
                    ),
                    (_, ValueKind::ThreadId) => format!(
                        "Without a per-process UUID the hash field is only the thread id; c{c}'s unlock decremented a hold it did not create."
                    ),
                    (Protocol::SetPxGetDel, _) => format!(
                        "c{c}'s GET saw its own value, but its lock expired before the DEL; the DEL removed the next holder's lock."
                    ),
                    _ => format!("c{c}'s lock had expired while it worked; its unconditional DEL removed another client's lock."),
                }
            }
            Property::Liveness if crashed => "The holder crashed while the lock had no TTL; no one else may delete it and it never expires, so the waiting client can never acquire.".to_string(),
            Property::ResourceSafety => LOST_UPDATE.to_string(),
            Property::Reentrancy => "A re-entry was refused, or the lock was freed while a hold was still counted.".to_string(),
            _ => format!("{property} was violated."),
        }
    }
}
