//! The ZooKeeper lock model told in words: each client, the tree and sessions, the
//! resource, every request with its reply, the watches that fire and the sessions that
//! expire, and the closing line that says why a property broke.

use crate::check::{happened, pair, Narrate};
use crate::diagram::{Exchange, Lane, LaneState};
use crate::kernel::{ClientPhase, FaultWords, LockChecks, WorkStep};
use crate::registry::Property;
use crate::resource::LOST_UPDATE;

use super::model::{lock_path, Action, Client, Phase, WatchOn, Work, ZkLockModel, ZkLockState};
use super::spec::{Notification, ZkState};
use super::text::{exchange_text, state_lines};

/// The watches that fired between `before` and `after`, as "watch fired for c1
/// (/lock/n-0000000000 deleted)".
fn fired(m: &ZkLockState, before: &ZkState, after: &ZkState) -> Vec<String> {
    let who = |n: &Notification| {
        m.clients
            .iter()
            .position(|c| c.session == Some(n.session))
            .map_or_else(|| format!("session {}", n.session), |c| format!("c{c}"))
    };
    after
        .notified
        .iter()
        .filter(|n| !before.notified.contains(n))
        .map(|n| format!("watch fired for {} ({} changed)", who(n), n.path))
        .collect()
}

/// How the client faults read: a pause stops the pings, a partition loses them.
pub(super) const WORDS: FaultWords = FaultWords {
    pause: " (GC / SIGSTOP): its pings stop too",
    pause_mark: " (pings too)",
    crash: " (kill -9)",
    servers: "the ensemble",
    heartbeats: "pings",
    alive: "its pings go on",
    alive_mark: "pings go on",
};

impl ZkLockModel {
    /// A client's phase in words: on its story line, and (shorter) on its diagram lane.
    pub(super) fn phase_words(&self, c: &Client) -> (String, &'static str) {
        let (story, lane) = match c.phase {
            Phase::Connect => ("connecting", "connecting"),
            Phase::Create => ("acquiring", "acquiring"),
            Phase::Find => (
                "looking for the node its lost create made",
                "finding its node",
            ),
            Phase::List => ("listing /lock", "queued"),
            Phase::Watch => ("watching its predecessor", "queued"),
            Phase::Wait => match (&c.pred, self.recipe.watch_on) {
                (Some(p), WatchOn::Predecessor) => {
                    let gone = format!("waiting for {} to go", lock_path(p));
                    return (gone, "waiting for a watch");
                }
                _ => (
                    "waiting for /lock's children to change",
                    "waiting for a watch",
                ),
            },
            Phase::Critical(_) => ("IN CRITICAL SECTION", "inside"),
            Phase::Release => ("releasing", "releasing"),
            Phase::Done if c.lost => ("gave up (session lost)", "gave up"),
            Phase::Done => ("done", "done"),
            Phase::Crashed => ("CRASHED", "crashed"),
        };
        (story.to_string(), lane)
    }
}

impl Narrate for ZkLockModel {
    fn describe_state(&self, s: &ZkLockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let (what, _) = self.phase_words(c);
            let session = c
                .session
                .map(|x| format!(", session {x}"))
                .unwrap_or_default();
            let node = match &c.node {
                Some(n) if c.phase.holding() => {
                    format!(", node {} (czxid {})", lock_path(n), c.token)
                }
                _ => String::new(),
            };
            let woken = if c.wakeups > 0 {
                format!(", woken {}x", c.wakeups)
            } else {
                String::new()
            };
            let tags = c.process.tags();
            lines.push(format!("c{i}: {what}{session}{node}{woken}{tags}"));
        }
        lines.extend(state_lines(&s.zk));
        let wakeups: u32 = s.clients.iter().map(|c| u32::from(c.wakeups)).sum();
        if wakeups > 0 {
            lines.push(format!("wake-ups so far: {wakeups}"));
        }
        if self.work != Work::MultiChecked && s.resource.accepted > 0 || self.work == Work::Fenced {
            lines.push(s.resource.describe());
        }
        lines
    }

    fn describe_action(&self, s: &ZkLockState, a: &Action) -> String {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.clone());
        let watches = e
            .as_ref()
            .map(|e| fired(s, &s.zk, &e.state.zk))
            .unwrap_or_default();
        let said = |who: String| {
            let mut t = match &sent {
                Some((cmd, reply)) => format!("{who}: {}", exchange_text(cmd, Some(reply))),
                None => who,
            };
            for w in &watches {
                t.push_str("; ");
                t.push_str(w);
            }
            t
        };
        match *a {
            Action::Step(c) => {
                let cl = &s.clients[c as usize];
                let after = e.as_ref().map(|e| e.state.clients[c as usize].phase);
                let fenced = self.work == Work::Fenced;
                match (&sent, WorkStep::of(cl.phase, after)) {
                    (Some(_), _) => said(format!("c{c}")),
                    (None, Some(w)) => w.story(c, cl.token, fenced, "writes the resource"),
                    (None, None) if cl.phase == Phase::Done => {
                        format!("c{c} asks for the lock again")
                    }
                    (None, None) => format!("c{c} steps"),
                }
            }
            Action::Ping(c) => said(format!("c{c}'s session")),
            Action::Tick => {
                let expired = e
                    .as_ref()
                    .map(|e| expired_sessions(s, &e.state))
                    .unwrap_or_default();
                let mut t = format!("time passes to t={}", s.now + 1);
                for x in expired.iter().chain(&watches) {
                    t.push_str("; ");
                    t.push_str(x);
                }
                t
            }
            Action::Suspend(c) if s.clients[c as usize].process.partitioned => format!(
                "c{c}'s connection is SUSPENDED (no reply within 2/3 of the session timeout): it stops working"
            ),
            Action::Suspend(c) => format!(
                "the server closes c{c}'s connection, its session gone: SUSPENDED, c{c} stops working"
            ),
            Action::Heal(c) => {
                let lost = e
                    .as_ref()
                    .is_some_and(|e| e.state.clients[c as usize].lost && !s.clients[c as usize].lost);
                if lost {
                    format!("c{c}'s partition heals: ZooKeeper says its session expired (LOST); c{c} stops")
                } else {
                    WORDS.story(a.client_fault())
                }
            }
            Action::Drop(c) => said(format!("c{c} (reply lost)")),
            Action::Failover => "the leader is cut off from the other servers: they elect a new leader, which gives every session a fresh timeout".to_string(),
            Action::Jump(_) => {
                let expired = e
                    .as_ref()
                    .map(|e| expired_sessions(s, &e.state))
                    .unwrap_or_default();
                let mut t = "the leader's clock leaps ahead: on it, sessions that had not pinged since have timed out".to_string();
                for x in expired.iter().chain(&watches) {
                    t.push_str("; ");
                    t.push_str(x);
                }
                t
            }
            _ => WORDS.story(a.client_fault()),
        }
    }

    fn lanes(&self, s: &ZkLockState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &ZkLockState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &ZkLockState) -> Option<u64> {
        Some(s.now)
    }

    fn exchange(&self, s: &ZkLockState, a: &Action) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, a: &Action) -> bool {
        a.client_fault().is_some_and(|(f, _)| f.is_fault())
            || matches!(a, Action::Drop(_) | Action::Failover | Action::Jump(_))
    }

    fn why(&self, property: Property, path: &[(Option<Action>, ZkLockState)]) -> String {
        let last = path.last().map(|(_, s)| s);
        let partitioned = happened(path, |a| matches!(a, Action::Partition(_)));
        let leapt = happened(path, |a| matches!(a, Action::Jump(_)));
        let next = if last.is_some_and(|s| s.clients.iter().any(|c| c.wakeups > 0)) {
            "the next waiter's watch fired and its node became the lowest"
        } else {
            "the next client's node became the lowest"
        };
        let pair = pair(&last.map(|s| self.in_critical(s)).unwrap_or_default());
        match property {
            // Judged on histories only: no model states them.
            Property::LockLinearizability | Property::ResourceLinearizability | Property::Fencing => {
                format!("{property} is judged on histories, not by this model.")
            }
            Property::MutualExclusion if leapt => format!(
                "ZooKeeper times sessions on the leader's clock, not on its clients': the leader's clock leapt ahead, and on it the holder's session had timed out, though the holder was running and connected. ZooKeeper expired the session and deleted its ephemeral node, {next}, while the holder worked on: {pair} are inside together. A holder that stops at SUSPENDED hears it only as the server closes its connection, after its node is gone: it cannot stop first. Only a token the resource checks (the node's czxid) keeps the late write out."
            ),
            Property::MutualExclusion if partitioned => format!(
                "The holder was cut off from the ensemble and stops only when told its session is lost, which it hears only once it reaches the ensemble again; meanwhile ZooKeeper expired the session, deleted its ephemeral node and {next}: {pair} are inside together. Stopping at SUSPENDED (before the timeout) avoids it."
            ),
            Property::MutualExclusion => format!(
                "The holder paused past its session timeout; its pings stopped with it, ZooKeeper expired the session and deleted its ephemeral node, {next}, and the holder resumed believing it still holds the lock: {pair} are inside together."
            ),
            Property::Liveness => {
                let what = last
                    .and_then(|s| self.orphan(s))
                    .unwrap_or_else(|| "a node".to_string());
                if last.is_some_and(|s| s.clients.iter().any(|c| c.process.hung)) {
                    return format!(
                        "The holder's worker hung inside its section, but its ZooKeeper client's own thread kept pinging: the session never expires, so nothing will delete {what}, and every waiter is stuck behind a holder that will never release. Only a session ending frees a ZooKeeper lock; a live process with a dead worker keeps it for ever (a watchdog on the work, not the process, must kill it)."
                    );
                }
                format!(
                    "A create took effect but its reply was lost, and the blind retry made a second node: nothing will delete {what} while a client waits behind it — it blocks everyone until the session ends."
                )
            }
            Property::ResourceSafety => {
                LOST_UPDATE
                    .to_string()
            }
            Property::NoForeignRelease | Property::Reentrancy => {
                format!("{property} is not checked by the ZooKeeper rows.")
            }
        }
    }
}

/// Each session of `s` gone in `after`, with the ephemeral nodes ZooKeeper deletes
/// with it.
fn expired_sessions(s: &ZkLockState, after: &ZkLockState) -> Vec<String> {
    s.zk.sessions
        .keys()
        .filter(|id| !after.zk.sessions.contains_key(id))
        .map(|id| {
            let nodes: Vec<&str> =
                s.zk.nodes
                    .iter()
                    .filter(|(_, n)| n.ephemeral_owner == Some(*id))
                    .map(|(p, _)| p.as_str())
                    .collect();
            if nodes.is_empty() {
                format!("session {id} expired")
            } else {
                format!(
                    "session {id} expired, ZooKeeper deletes {}",
                    nodes.join(", ")
                )
            }
        })
        .collect()
}
