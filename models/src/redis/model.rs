//! The stateright model shared by every `redis-*` scenario.

use stateright::{Model, Property};

use crate::check::Narrate;
use crate::redis::spec::{command_text, entry_text, reply_text, RedisCommand, RedisReply};

use super::protocol::{self, Acquired, Protocol, ValueKind};
use super::replication::{self, Node};
use super::{FENCE_KEY, LOCK_KEY};

/// A scenario's configuration: protocol, topology, time and fault budget.
#[derive(Clone, Debug)]
pub struct RedisLockModel {
    /// How clients lock.
    pub protocol: Protocol,
    /// What they write as identity.
    pub value: ValueKind,
    /// Number of clients (each locks once).
    pub clients: usize,
    /// Lease in ticks (ms).
    pub ttl: u64,
    /// Replicas behind the master (0: a single node).
    pub replicas: usize,
    /// `WAIT n` after acquiring, before entering.
    pub wait: Option<u32>,
    /// Take an `INCR` fencing token and present it to the resource.
    pub fencing: bool,
    /// Process pauses (GC) the checker may inject.
    pub pauses: u8,
    /// Client crashes.
    pub crashes: u8,
    /// Sentinel failovers.
    pub failovers: u8,
    /// The clock stops here.
    pub horizon: u64,
    /// Which properties this scenario checks.
    pub properties: &'static [&'static str],
}

/// Where a client is in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// About to start (reads the clock, for a timestamp value).
    Idle,
    /// Acquire stage `n`.
    Acquire(u8),
    /// `WAIT n` after the acquire.
    Wait,
    /// `INCR` for a fencing token.
    Fence,
    /// Inside the critical section, sub-step `n`.
    Critical(u8),
    /// Release stage `n`.
    Release(u8),
    /// Finished.
    Done,
    /// Crashed for good.
    Crashed,
}

/// A client process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    /// Program counter.
    pub phase: Phase,
    /// Stopped by a pause fault.
    pub paused: bool,
    /// The value / hash field it writes.
    pub value: String,
    /// Until when it believes it holds the lock.
    pub lease_until: Option<u64>,
    /// Its fencing token.
    pub token: i64,
    /// What it read from the resource.
    pub read: u8,
    /// The failover epoch its pending `WAIT` belongs to, and the offset to wait for.
    pub wait_for: (u8, u32),
}

/// The protected resource: a counter each holder increments (read, then write).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// The counter.
    pub value: u8,
    /// Writes accepted (a correct protocol keeps `value == accepted`).
    pub accepted: u8,
    /// Highest fencing token presented (reads and writes carrying less are refused).
    pub max_token: i64,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedisLockState {
    /// The clock.
    pub now: u64,
    /// Master and replicas.
    pub nodes: Vec<Node>,
    /// Index of the current master.
    pub master: u8,
    /// Failovers so far.
    pub epoch: u8,
    /// Writes since the current master was promoted.
    pub offset: u32,
    /// The clients.
    pub clients: Vec<Client>,
    /// The resource.
    pub resource: Resource,
    /// Faults left: pauses, crashes, failovers.
    pub budget: (u8, u8, u8),
    /// The client that released someone else's lock, if any.
    pub foreign_release: Option<u8>,
    /// The client whose re-entry was refused, or whose lock was freed with holds left.
    pub reentrancy_broken: Option<u8>,
}

/// What can happen next.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A client's next step.
    Step(u8),
    /// The Redisson watchdog renews the client's lease.
    Renew(u8),
    /// One millisecond passes.
    Tick,
    /// A replica applies one pending write.
    Replicate(u8),
    /// Fault: the client stops (GC pause).
    Pause(u8),
    /// The paused client runs again.
    Resume(u8),
    /// Fault: the client crashes.
    Crash(u8),
    /// Fault: Sentinel promotes this replica.
    Failover(u8),
}

/// A step's visible effect, for stories.
struct Effect {
    state: RedisLockState,
    sent: Option<(RedisCommand, RedisReply)>,
}

impl Phase {
    fn critical(self) -> bool {
        matches!(self, Phase::Critical(_))
    }

    fn holding(self) -> bool {
        matches!(
            self,
            Phase::Wait | Phase::Fence | Phase::Critical(_) | Phase::Release(_)
        )
    }
}

impl RedisLockModel {
    fn value_of(&self, c: usize) -> String {
        match self.value {
            ValueKind::Unique if self.protocol == Protocol::Redisson => format!("c{c}:t1"),
            ValueKind::Unique => format!("c{c}"),
            ValueKind::ThreadId => "t1".to_string(),
            ValueKind::Timestamp => String::new(),
        }
    }

    fn after_acquire(&self) -> Phase {
        if self.wait.is_some() {
            Phase::Wait
        } else if self.fencing {
            Phase::Fence
        } else {
            Phase::Critical(0)
        }
    }

    fn send(
        &self,
        s: &mut RedisLockState,
        c: usize,
        cmd: &RedisCommand,
        release: bool,
    ) -> RedisReply {
        let m = s.master as usize;
        let before = s.nodes[m].db.clone();
        let (reply, foreign) = s.nodes[m].exec(c as u8, cmd, s.now, release);
        if foreign && s.foreign_release.is_none() {
            s.foreign_release = Some(c as u8);
        }
        // Like Redis, only writes that changed the keyspace enter the stream (a refused
        // SET NX is not replicated), so busy retries do not grow the offset.
        if cmd.is_write() && s.nodes[m].db != before {
            s.offset += 1;
            replication::propagate(&mut s.nodes, m, cmd, s.now, c as u8);
        }
        reply
    }

    fn step(&self, st: &RedisLockState, c: usize) -> Option<Effect> {
        let mut s = st.clone();
        let cl = &st.clients[c];
        if cl.paused {
            return None;
        }
        let ttl = self.ttl;
        let mut sent: Option<(RedisCommand, RedisReply)> = None;
        macro_rules! exchange {
            ($s:expr, $cmd:expr, $release:expr) => {{
                let cmd = $cmd;
                let reply = self.send($s, c, &cmd, $release);
                sent = Some((cmd, reply.clone()));
                reply
            }};
        }
        let next = match cl.phase {
            Phase::Idle => {
                s.clients[c].value = if self.value == ValueKind::Timestamp {
                    s.now.to_string()
                } else {
                    self.value_of(c)
                };
                Phase::Acquire(0)
            }
            Phase::Acquire(k) => {
                let cmd = protocol::acquire(self.protocol, k, &cl.value, ttl);
                let reply = exchange!(&mut s, cmd, false);
                match protocol::acquired(self.protocol, k, &reply) {
                    Acquired::Next => Phase::Acquire(k + 1),
                    Acquired::Busy => Phase::Acquire(0),
                    Acquired::Got => {
                        if protocol::has_ttl(self.protocol) {
                            s.clients[c].lease_until = Some(s.now + ttl);
                        }
                        s.clients[c].wait_for = (s.epoch, s.offset);
                        self.after_acquire()
                    }
                }
            }
            Phase::Wait => {
                let n = self.wait.unwrap_or(0);
                let cmd = RedisCommand::Wait {
                    numreplicas: n,
                    timeout: 0,
                };
                if cl.wait_for.0 != s.epoch {
                    // The master this WAIT was sent to is gone: the client sees an
                    // error and starts over.
                    sent = Some((cmd, RedisReply::Error("connection lost (failover)".into())));
                    s.clients[c].lease_until = None;
                    Phase::Acquire(0)
                } else {
                    let got =
                        replication::acked(&s.nodes, s.master as usize, s.offset, cl.wait_for.1);
                    if got < n {
                        return None;
                    }
                    sent = Some((cmd, RedisReply::Integer(i64::from(got))));
                    if self.fencing {
                        Phase::Fence
                    } else {
                        Phase::Critical(0)
                    }
                }
            }
            Phase::Fence => match exchange!(&mut s, protocol::fence(), false) {
                RedisReply::Integer(t) => {
                    s.clients[c].token = t;
                    Phase::Critical(0)
                }
                _ => Phase::Release(0),
            },
            Phase::Critical(k) if self.fencing => {
                let r = &mut s.resource;
                if cl.token < r.max_token {
                    Phase::Release(0)
                } else {
                    r.max_token = cl.token;
                    if k == 0 {
                        s.clients[c].read = r.value;
                        Phase::Critical(1)
                    } else {
                        r.value = cl.read.saturating_add(1);
                        r.accepted = r.accepted.saturating_add(1);
                        Phase::Release(0)
                    }
                }
            }
            Phase::Critical(k) if self.protocol == Protocol::Redisson => {
                let own_field = |s: &RedisLockState| {
                    let n = &s.nodes[s.master as usize];
                    matches!(n.db.live(LOCK_KEY, s.now).map(|e| &e.value),
                        Some(crate::redis::spec::Value::Hash(h)) if h.contains_key(&cl.value))
                };
                match k {
                    0 => {
                        let mine = own_field(&s);
                        let cmd = protocol::acquire(self.protocol, 0, &cl.value, ttl);
                        if exchange!(&mut s, cmd, false) == RedisReply::Nil {
                            s.clients[c].lease_until = Some(s.now + ttl);
                            Phase::Critical(1)
                        } else {
                            if mine {
                                s.reentrancy_broken.get_or_insert(c as u8);
                            }
                            Phase::Critical(2)
                        }
                    }
                    1 => {
                        let cmd = protocol::release(self.protocol, 0, &cl.value, ttl)?;
                        if exchange!(&mut s, cmd, true) == RedisReply::Integer(1) {
                            // Freed while this client still held it once.
                            s.reentrancy_broken.get_or_insert(c as u8);
                        }
                        Phase::Critical(2)
                    }
                    _ => Phase::Release(0),
                }
            }
            Phase::Critical(_) => Phase::Release(0),
            Phase::Release(k) => match protocol::release(self.protocol, k, &cl.value, ttl) {
                None => Phase::Done,
                Some(cmd) => {
                    let reply = exchange!(&mut s, cmd, true);
                    match protocol::released(self.protocol, k, &cl.value, &reply) {
                        Some(next) => Phase::Release(next),
                        None => Phase::Done,
                    }
                }
            },
            Phase::Done | Phase::Crashed => return None,
        };
        s.clients[c].phase = next;
        if !next.holding() {
            s.clients[c].lease_until = None;
        }
        self.settle(&mut s);
        Some(Effect { state: s, sent })
    }

    fn settle(&self, s: &mut RedisLockState) {
        let now = s.now;
        for n in &mut s.nodes {
            n.purge(now);
        }
    }

    /// Time may pass unless a running holder's lease would run out: without a pause,
    /// a holder finishes (or its watchdog renews) in time — that is the protocol's
    /// premise, and the faults are what break it.
    fn may_tick(&self, s: &RedisLockState) -> bool {
        s.now < self.horizon
            && s.clients.iter().all(|c| {
                c.paused || !c.phase.holding() || c.lease_until.is_none_or(|d| s.now + 1 < d)
            })
    }

    fn renew(&self, st: &RedisLockState, c: usize) -> Option<Effect> {
        let cl = &st.clients[c];
        let due = cl.lease_until.is_some_and(|d| st.now + 1 >= d);
        if self.protocol != Protocol::Redisson || cl.paused || !cl.phase.critical() || !due {
            return None;
        }
        let mut s = st.clone();
        let cmd = RedisCommand::EvalRedissonRenew {
            key: LOCK_KEY.into(),
            field: cl.value.clone(),
            px: self.ttl,
        };
        let reply = self.send(&mut s, c, &cmd, false);
        if reply == RedisReply::Integer(1) {
            s.clients[c].lease_until = Some(s.now + self.ttl);
        }
        Some(Effect {
            state: s,
            sent: Some((cmd, reply)),
        })
    }

    fn effect(&self, st: &RedisLockState, a: &Action) -> Option<Effect> {
        let plain = |state: RedisLockState| Some(Effect { state, sent: None });
        let mut s = st.clone();
        match *a {
            Action::Step(c) => self.step(st, c as usize),
            Action::Renew(c) => self.renew(st, c as usize),
            Action::Tick => {
                if !self.may_tick(st) {
                    return None;
                }
                s.now += 1;
                self.settle(&mut s);
                plain(s)
            }
            Action::Replicate(r) => {
                if !s.nodes[r as usize].replicate_one() {
                    return None;
                }
                self.settle(&mut s);
                plain(s)
            }
            Action::Pause(c) => {
                let cl = &mut s.clients[c as usize];
                if s.budget.0 == 0 || cl.paused || !cl.phase.holding() {
                    return None;
                }
                cl.paused = true;
                s.budget.0 -= 1;
                plain(s)
            }
            Action::Resume(c) => {
                let cl = &mut s.clients[c as usize];
                if !cl.paused {
                    return None;
                }
                cl.paused = false;
                plain(s)
            }
            Action::Crash(c) => {
                let cl = &mut s.clients[c as usize];
                let started = cl.phase.holding() || matches!(cl.phase, Phase::Acquire(k) if k > 0);
                if s.budget.1 == 0 || !started {
                    return None;
                }
                cl.phase = Phase::Crashed;
                cl.paused = false;
                cl.lease_until = None;
                s.budget.1 -= 1;
                plain(s)
            }
            Action::Failover(r) => {
                let (r, m) = (r as usize, s.master as usize);
                if s.budget.2 == 0 || r == m || !s.nodes[r].up {
                    return None;
                }
                replication::promote(&mut s.nodes, m, r);
                s.master = r as u8;
                s.epoch += 1;
                s.offset = 0;
                s.budget.2 -= 1;
                self.settle(&mut s);
                plain(s)
            }
        }
    }

    fn in_critical(s: &RedisLockState) -> Vec<usize> {
        (0..s.clients.len())
            .filter(|&c| s.clients[c].phase.critical())
            .collect()
    }

    /// A client waits for a lock that only a crashed client could remove: it exists with
    /// no deadline, so nothing will ever free it.
    fn deadlocked(s: &RedisLockState) -> bool {
        let node = &s.nodes[s.master as usize];
        let stuck = node
            .db
            .live(LOCK_KEY, s.now)
            .is_some_and(|e| e.deadline.is_none())
            && node.creator.is_some_and(|o| {
                s.clients
                    .get(o as usize)
                    .is_some_and(|c| c.phase == Phase::Crashed)
            });
        let waiting = s
            .clients
            .iter()
            .any(|c| matches!(c.phase, Phase::Idle | Phase::Acquire(_)));
        stuck && waiting
    }
}

/// Property names, as the catalog and the reports spell them.
pub mod props {
    /// Never two clients inside their critical sections at once.
    pub const MUTEX: &str = "mutual exclusion";
    /// A client never deletes or decrements a lock another client created.
    pub const FOREIGN: &str = "no foreign release";
    /// A waiting client can always still acquire (no lock that nothing can free).
    pub const LIVENESS: &str = "liveness";
    /// The resource never loses an update or accepts a stale token.
    pub const RESOURCE: &str = "resource safety";
    /// A holder re-acquires without being refused; the lock is freed only at count 0.
    pub const REENTRANCY: &str = "reentrancy";
}

impl Model for RedisLockModel {
    type State = RedisLockState;
    type Action = Action;

    fn init_states(&self) -> Vec<RedisLockState> {
        let clients = (0..self.clients)
            .map(|c| Client {
                phase: if self.value == ValueKind::Timestamp {
                    Phase::Idle
                } else {
                    Phase::Acquire(0)
                },
                paused: false,
                value: self.value_of(c),
                lease_until: None,
                token: 0,
                read: 0,
                wait_for: (0, 0),
            })
            .collect();
        vec![RedisLockState {
            now: 0,
            nodes: vec![Node::new(); 1 + self.replicas],
            master: 0,
            epoch: 0,
            offset: 0,
            clients,
            resource: Resource::default(),
            budget: (self.pauses, self.crashes, self.failovers),
            foreign_release: None,
            reentrancy_broken: None,
        }]
    }

    fn actions(&self, s: &RedisLockState, out: &mut Vec<Action>) {
        for c in 0..s.clients.len() as u8 {
            out.push(Action::Step(c));
            out.push(Action::Renew(c));
            out.push(Action::Pause(c));
            out.push(Action::Resume(c));
            out.push(Action::Crash(c));
        }
        out.push(Action::Tick);
        for r in 0..s.nodes.len() as u8 {
            out.push(Action::Replicate(r));
            out.push(Action::Failover(r));
        }
    }

    fn next_state(&self, s: &RedisLockState, a: Action) -> Option<RedisLockState> {
        self.effect(s, &a).map(|e| e.state).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let all: Vec<Property<Self>> = vec![
            Property::always(props::MUTEX, |_, s: &RedisLockState| {
                Self::in_critical(s).len() <= 1
            }),
            Property::always(props::FOREIGN, |_, s: &RedisLockState| {
                s.foreign_release.is_none()
            }),
            Property::always(props::LIVENESS, |_, s: &RedisLockState| {
                !Self::deadlocked(s)
            }),
            Property::always(props::RESOURCE, |_, s: &RedisLockState| {
                s.resource.value == s.resource.accepted
            }),
            Property::always(props::REENTRANCY, |_, s: &RedisLockState| {
                s.reentrancy_broken.is_none()
            }),
        ];
        all.into_iter()
            .filter(|p| self.properties.contains(&p.name))
            .collect()
    }
}

impl Narrate for RedisLockModel {
    fn describe_state(&self, s: &RedisLockState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, c) in s.clients.iter().enumerate() {
            let what = match c.phase {
                Phase::Idle => "idle".to_string(),
                Phase::Acquire(0) => "acquiring".to_string(),
                Phase::Acquire(k) => format!("acquiring (step {})", k + 1),
                Phase::Wait => "waiting for WAIT".to_string(),
                Phase::Fence => "taking a fencing token".to_string(),
                Phase::Critical(_) => "IN CRITICAL SECTION".to_string(),
                Phase::Release(_) => "releasing".to_string(),
                Phase::Done => "done".to_string(),
                Phase::Crashed => "CRASHED".to_string(),
            };
            let lease = c
                .lease_until
                .map(|d| format!(", believes it holds until t={d}"))
                .unwrap_or_default();
            let token = if self.fencing && c.token > 0 {
                format!(", token {}", c.token)
            } else {
                String::new()
            };
            let paused = if c.paused { " [PAUSED]" } else { "" };
            lines.push(format!("c{i}: {what}{lease}{token}{paused}"));
        }
        for (i, n) in s.nodes.iter().enumerate() {
            let role = if !n.up {
                "demoted"
            } else if i == s.master as usize {
                "master"
            } else {
                "replica"
            };
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
            let r = &s.resource;
            lines.push(format!(
                "resource: counter={} after {} accepted writes, highest token {}",
                r.value, r.accepted, r.max_token
            ));
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
            Action::Pause(c) => format!("c{c} pauses (GC / stop-the-world)"),
            Action::Resume(c) => format!("c{c} resumes"),
            Action::Crash(c) => format!("c{c} crashes"),
            Action::Failover(r) => format!(
                "Sentinel promotes replica redis{r} to master; clients are redirected to it"
            ),
        }
    }

    fn is_fault(&self, a: &Action) -> bool {
        matches!(a, Action::Pause(_) | Action::Crash(_) | Action::Failover(_))
    }

    fn why(&self, property: &str, path: &[(Option<Action>, RedisLockState)]) -> String {
        let failover = path
            .iter()
            .any(|(a, _)| matches!(a, Some(Action::Failover(_))));
        let paused = path
            .iter()
            .any(|(a, _)| matches!(a, Some(Action::Pause(_))));
        let crashed = path
            .iter()
            .any(|(a, _)| matches!(a, Some(Action::Crash(_))));
        let last = path.last().map(|(_, s)| s);
        let who = last.map(Self::in_critical).unwrap_or_default();
        let pair = match who.as_slice() {
            [a, b, ..] => format!("c{a} and c{b}"),
            _ => "two clients".to_string(),
        };
        match property {
            props::MUTEX if failover => format!(
                "The replica was promoted before the SET reached it, so the first holder's lock never existed on the new master; {pair} both hold the lock."
            ),
            props::MUTEX if self.protocol == Protocol::Redisson && self.value == ValueKind::ThreadId => format!(
                "Both processes call their thread \"t1\": the second one's lock script found its own field and re-entered the other's lock; {pair} are inside together."
            ),
            props::MUTEX if paused => format!(
                "The holder paused past its TTL; the key expired while it was still inside, and another client acquired it: {pair} are in the critical section together."
            ),
            props::MUTEX => format!(
                "Checking and setting the lock are two commands; both clients saw it free before either set it, so {pair} are inside together."
            ),
            props::FOREIGN => {
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
            props::LIVENESS if crashed => "The holder crashed while the lock had no TTL; no one else may delete it and it never expires, so the waiting client can never acquire.".to_string(),
            props::RESOURCE => "A write based on a stale read was accepted: the resource lost an update.".to_string(),
            props::REENTRANCY => "A re-entry was refused, or the lock was freed while a hold was still counted.".to_string(),
            _ => format!("{property} was violated."),
        }
    }
}
