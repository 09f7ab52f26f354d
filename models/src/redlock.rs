//! Redlock: N independent Redis nodes (each a [`crate::redis::spec`] node); a client
//! sends `SET lock v NX PX ttl` to every node in any order, counts its successes, and
//! holds the lock only with a majority and a positive validity
//! `ttl − elapsed − drift`; otherwise it releases everywhere (compare-and-delete) and
//! retries. Nodes are interchangeable until a fault touches one, so states are
//! canonicalised by sorting nodes (every per-node fact lives in the node's entry).

use stateright::{Model, Property};

use crate::check::Narrate;
use crate::redis::spec::{entry_text, RedisCommand, RedisReply};
use crate::redis::{Node, LOCK_KEY};

/// The model.
#[derive(Clone, Debug)]
pub struct RedlockModel {
    /// Number of Redis nodes.
    pub nodes: usize,
    /// Number of clients.
    pub clients: usize,
    /// Lease in ticks.
    pub ttl: u64,
    /// Clock drift allowance subtracted from the validity.
    pub drift: u64,
    /// Acquisition attempts per client.
    pub attempts: u8,
    /// Node crash-and-restart-without-data faults.
    pub restarts: u8,
    /// Ticks a crashed node stays down before restarting.
    pub restart_delay: u64,
    /// Clock jumps (one node's clock leaps `ttl` ahead).
    pub jumps: u8,
    /// Client pauses.
    pub pauses: u8,
    /// The clock stops here.
    pub horizon: u64,
}

/// One Redis node and what each client has done with it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RlNode {
    /// The server (keyspace + ghost creator).
    pub server: Node,
    /// How far its clock is ahead of real time.
    pub offset: u64,
    /// Down since this instant (crashed, not yet restarted).
    pub down_since: Option<u64>,
    /// Bit `c`: client `c` has sent its SET here in the current attempt.
    pub tried: u8,
    /// Bit `c`: and it succeeded.
    pub got: u8,
    /// Its name in stories (kept through canonical sorting).
    pub name: u8,
}

/// A client's program counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RlPhase {
    /// Sending SETs.
    Acquiring,
    /// Holding the lock.
    Critical,
    /// Finished.
    Done,
}

/// A client.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RlClient {
    /// Where it is.
    pub phase: RlPhase,
    /// When the current attempt started.
    pub t0: u64,
    /// Attempts left after this one.
    pub attempts_left: u8,
    /// End of validity while holding.
    pub lease_until: Option<u64>,
    /// Stopped by a pause fault.
    pub paused: bool,
}

/// The system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedlockState {
    /// The clock.
    pub now: u64,
    /// The nodes.
    pub nodes: Vec<RlNode>,
    /// The clients.
    pub clients: Vec<RlClient>,
    /// Faults left: restarts, jumps, pauses.
    pub budget: (u8, u8, u8),
}

/// What can happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RlAction {
    /// Client sends `SET NX PX` to node (index).
    Send(u8, u8),
    /// Client has heard from every node: decide.
    Decide(u8),
    /// Client leaves the critical section and releases everywhere.
    Leave(u8),
    /// One tick.
    Tick,
    /// Fault: a node crashes, losing its data (no persistence).
    Crash(u8),
    /// The node comes back, empty.
    Restart(u8),
    /// Fault: a node's clock jumps `ttl` ahead.
    Jump(u8),
    /// Fault: a client pauses.
    Pause(u8),
    /// It resumes.
    Resume(u8),
}

/// The property.
pub const MUTEX: &str = "mutual exclusion";

impl RedlockModel {
    fn majority(&self) -> usize {
        self.nodes / 2 + 1
    }

    fn value(c: usize) -> String {
        format!("c{c}")
    }

    fn release_all(&self, s: &mut RedlockState, c: usize) {
        let bit = 1u8 << c;
        let cmd = RedisCommand::EvalCompareAndDelete {
            key: LOCK_KEY.into(),
            value: Self::value(c),
        };
        let now = s.now;
        for n in &mut s.nodes {
            if n.down_since.is_none() {
                n.server.exec(c as u8, &cmd, now + n.offset, true);
            }
            n.tried &= !bit;
            n.got &= !bit;
        }
    }

    fn settle(s: &mut RedlockState) {
        let now = s.now;
        for n in &mut s.nodes {
            n.server.purge(now + n.offset);
        }
    }

    fn apply(&self, st: &RedlockState, a: &RlAction) -> Option<RedlockState> {
        let mut s = st.clone();
        let live = |c: &RlClient| !c.paused;
        match *a {
            RlAction::Send(c, i) => {
                let (c, i) = (c as usize, i as usize);
                let bit = 1u8 << c;
                let cl = &s.clients[c];
                if cl.phase != RlPhase::Acquiring || !live(cl) || s.nodes[i].tried & bit != 0 {
                    return None;
                }
                let n = &mut s.nodes[i];
                n.tried |= bit;
                if n.down_since.is_none() {
                    let cmd = RedisCommand::Set {
                        key: LOCK_KEY.into(),
                        value: Self::value(c),
                        nx: true,
                        px: Some(self.ttl),
                    };
                    if n.server.exec(c as u8, &cmd, s.now + n.offset, false).0 == RedisReply::Ok {
                        n.got |= bit;
                    }
                }
            }
            RlAction::Decide(c) => {
                let c = c as usize;
                let bit = 1u8 << c;
                let cl = &s.clients[c];
                if cl.phase != RlPhase::Acquiring
                    || !live(cl)
                    || s.nodes.iter().any(|n| n.tried & bit == 0)
                {
                    return None;
                }
                let got = s.nodes.iter().filter(|n| n.got & bit != 0).count();
                let validity = self.ttl as i64 - (s.now - cl.t0) as i64 - self.drift as i64;
                if got >= self.majority() && validity > 0 {
                    s.clients[c].phase = RlPhase::Critical;
                    s.clients[c].lease_until = Some(s.now + validity as u64);
                } else {
                    self.release_all(&mut s, c);
                    let cl = &mut s.clients[c];
                    if cl.attempts_left == 0 {
                        cl.phase = RlPhase::Done;
                    } else {
                        cl.attempts_left -= 1;
                        cl.t0 = s.now;
                    }
                }
            }
            RlAction::Leave(c) => {
                let c = c as usize;
                if s.clients[c].phase != RlPhase::Critical || !live(&s.clients[c]) {
                    return None;
                }
                self.release_all(&mut s, c);
                s.clients[c].phase = RlPhase::Done;
                s.clients[c].lease_until = None;
            }
            RlAction::Tick => {
                let blocked = s.clients.iter().any(|c| {
                    !c.paused
                        && c.phase == RlPhase::Critical
                        && c.lease_until.is_some_and(|d| s.now + 1 >= d)
                });
                // Bound: an attempt's SETs all go out within one tick (elapsed 0), which
                // keeps the state space small; validity still subtracts the drift.
                let acquiring: u8 = (0..s.clients.len())
                    .filter(|&c| s.clients[c].phase == RlPhase::Acquiring)
                    .fold(0, |m, c| m | (1 << c));
                let mid_attempt = s.nodes.iter().any(|n| n.tried & acquiring != 0);
                if s.now >= self.horizon || blocked || mid_attempt {
                    return None;
                }
                s.now += 1;
            }
            RlAction::Crash(i) => {
                let n = &mut s.nodes[i as usize];
                if s.budget.0 == 0 || n.down_since.is_some() {
                    return None;
                }
                s.budget.0 -= 1;
                n.down_since = Some(s.now);
                n.server = Node::new();
            }
            RlAction::Restart(i) => {
                let n = &mut s.nodes[i as usize];
                match n.down_since {
                    Some(t) if s.now >= t + self.restart_delay => n.down_since = None,
                    _ => return None,
                }
            }
            RlAction::Jump(i) => {
                if s.budget.1 == 0 {
                    return None;
                }
                s.budget.1 -= 1;
                s.nodes[i as usize].offset += self.ttl;
            }
            RlAction::Pause(c) => {
                let cl = &mut s.clients[c as usize];
                if s.budget.2 == 0 || cl.paused || cl.phase != RlPhase::Critical {
                    return None;
                }
                s.budget.2 -= 1;
                cl.paused = true;
            }
            RlAction::Resume(c) => {
                let cl = &mut s.clients[c as usize];
                if !cl.paused {
                    return None;
                }
                cl.paused = false;
            }
        }
        Self::settle(&mut s);
        Some(s)
    }
}

impl Model for RedlockModel {
    type State = RedlockState;
    type Action = RlAction;

    fn init_states(&self) -> Vec<RedlockState> {
        let nodes = (0..self.nodes)
            .map(|i| RlNode {
                server: Node::new(),
                offset: 0,
                down_since: None,
                tried: 0,
                got: 0,
                name: i as u8,
            })
            .collect();
        let clients = (0..self.clients)
            .map(|_| RlClient {
                phase: RlPhase::Acquiring,
                t0: 0,
                attempts_left: self.attempts.saturating_sub(1),
                lease_until: None,
                paused: false,
            })
            .collect();
        vec![RedlockState {
            now: 0,
            nodes,
            clients,
            budget: (self.restarts, self.jumps, self.pauses),
        }]
    }

    fn actions(&self, s: &RedlockState, out: &mut Vec<RlAction>) {
        for c in 0..s.clients.len() as u8 {
            for i in 0..s.nodes.len() as u8 {
                out.push(RlAction::Send(c, i));
            }
            out.extend([
                RlAction::Decide(c),
                RlAction::Leave(c),
                RlAction::Pause(c),
                RlAction::Resume(c),
            ]);
        }
        out.push(RlAction::Tick);
        for i in 0..s.nodes.len() as u8 {
            out.extend([RlAction::Crash(i), RlAction::Restart(i), RlAction::Jump(i)]);
        }
    }

    fn next_state(&self, s: &RedlockState, a: RlAction) -> Option<RedlockState> {
        self.apply(s, &a).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(MUTEX, |_, s: &RedlockState| {
            s.clients
                .iter()
                .filter(|c| c.phase == RlPhase::Critical)
                .count()
                <= 1
        })]
    }
}

impl Narrate for RedlockModel {
    fn canonical(&self, s: &RedlockState) -> RedlockState {
        let mut c = s.clone();
        for n in &mut c.nodes {
            n.name = 0;
        }
        c.nodes.sort();
        c
    }

    fn describe_state(&self, s: &RedlockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let bit = 1u8 << i;
            let got: Vec<String> = s
                .nodes
                .iter()
                .filter(|n| n.got & bit != 0)
                .map(|n| format!("redis{}", n.name))
                .collect();
            let what = match c.phase {
                RlPhase::Acquiring => {
                    format!("acquiring since t={}, has [{}]", c.t0, got.join(", "))
                }
                RlPhase::Critical => format!(
                    "IN CRITICAL SECTION (majority [{}]), valid until t={}",
                    got.join(", "),
                    c.lease_until.unwrap_or(0)
                ),
                RlPhase::Done => "done".to_string(),
            };
            lines.push(format!(
                "c{i}: {what}{}",
                if c.paused { " [PAUSED]" } else { "" }
            ));
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
            lines.push(format!("redis{}: {state}{clock}", n.name));
        }
        lines
    }

    fn describe_action(&self, s: &RedlockState, a: &RlAction) -> String {
        let name = |i: u8| s.nodes.get(i as usize).map_or(i, |n| n.name);
        match *a {
            RlAction::Send(c, i) => {
                let after = self.apply(s, a);
                let ok = after.is_some_and(|n| n.nodes[i as usize].got & (1 << c) != 0);
                format!(
                    "c{c}: SET lock c{c} NX PX {} on redis{} -> {}",
                    self.ttl,
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
                        "c{c} has a majority and positive validity: it enters the critical section"
                    )
                } else {
                    format!("c{c} has no majority (or no validity left): releases everywhere")
                }
            }
            RlAction::Leave(c) => format!("c{c} leaves and releases everywhere"),
            RlAction::Tick => format!("time passes to t={}", s.now + 1),
            RlAction::Crash(i) => format!(
                "redis{} crashes; without persistence its keys are gone",
                name(i)
            ),
            RlAction::Restart(i) => format!("redis{} restarts, empty", name(i)),
            RlAction::Jump(i) => format!("redis{}'s clock jumps {} ahead", name(i), self.ttl),
            RlAction::Pause(c) => format!("c{c} pauses (GC)"),
            RlAction::Resume(c) => format!("c{c} resumes"),
        }
    }

    fn is_fault(&self, a: &RlAction) -> bool {
        matches!(
            a,
            RlAction::Crash(_) | RlAction::Jump(_) | RlAction::Pause(_)
        )
    }

    fn why(&self, _: &str, path: &[(Option<RlAction>, RedlockState)]) -> String {
        let has = |f: fn(&RlAction) -> bool| path.iter().any(|(a, _)| a.as_ref().is_some_and(f));
        if has(|a| matches!(a, RlAction::Crash(_))) {
            "A node in the first client's majority restarted without its data; the second client counted it as free and reached its own majority: two holders.".into()
        } else if has(|a| matches!(a, RlAction::Jump(_))) {
            "A node's clock jumped ahead and expired the first client's key early; the second client counted it and reached its own majority: two holders.".into()
        } else if has(|a| matches!(a, RlAction::Pause(_))) {
            "The holder paused past its validity; its keys expired on every node and another client acquired a majority while it still believed it held the lock (Redlock tokens cannot fence).".into()
        } else {
            "Two clients hold a majority at once.".into()
        }
    }
}
