//! The Redlock model: N independent Redis nodes (each a [`crate::redis::spec`] node); a client
//! sends `SET lock v NX PX ttl` to every node in any order, counts its successes, and
//! holds the lock only with a majority and a positive validity
//! `ttl − elapsed − drift`; otherwise it releases everywhere (compare-and-delete) and
//! retries. Clients and nodes are interchangeable, and every per-node fact lives in the
//! node's entry, so the search stores states up to renaming (`super::symmetry`).

use smallvec::SmallVec;
use stateright::Model;

use crate::kernel::{
    client_faults, inside, invariants, time, Budget, ClientPhase, LockChecks, Process, Stage,
};
use crate::protocol::outcome::Outcome;
use crate::protocol::redis::steps::Fill;
use crate::redis::protocol::DescribedRef;
use crate::redis::spec::{RedisCommand, RedisReply};
use crate::redis::{NodeRef, LOCK_KEY};
use crate::registry::{Fault, Property};

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
    /// Faults the checker may inject: nodes crashing and restarting without their
    /// data, clock jumps (one node's clock leaps `ttl` ahead), client pauses, and
    /// partitions that split the nodes and the clients into two sides.
    pub faults: Budget,
    /// Ticks a crashed node stays down before restarting.
    pub restart_delay: u64,
    /// A crashed node comes back with every key it had, each with its expiry: it
    /// appended every write to a file before replying (`appendonly yes`), and the
    /// file outlives the process.
    pub persistent: bool,
    /// Faults strike before here; the clock stops here unless `tail` says otherwise.
    pub horizon: u64,
    /// Past the horizon, time may run this many ticks further while a deadline is still
    /// ahead, and faults no longer strike: a progress check's way to let leases run out
    /// ([`crate::progress`]). 0 for safety checks.
    pub tail: u64,
    /// Clients start over when done, and the clock runs for ever past the horizon
    /// ([`crate::kernel::repeat`]): a starvation check's model (`tail` is then
    /// [`crate::kernel::repeat::FOR_EVER`]).
    pub repeat: bool,
    /// A user's per-node steps in place of `SET NX PX` and compare-and-delete (see
    /// [`crate::protocol::redlock`]); `None` for the catalog's Redlock.
    pub protocol: Option<DescribedRef>,
    /// Grants needed (`None`: a majority).
    pub quorum: Option<usize>,
}

/// One Redis node and what each client has done with it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RlNode {
    /// The server (keyspace + ghost creator), the one copy of an equal node
    /// ([`NodeRef`]): copying a state then copies five pointers, not five keyspaces.
    pub server: NodeRef,
    /// How far its clock is ahead of real time.
    pub offset: u64,
    /// Down since this instant (crashed, not yet restarted).
    pub down_since: Option<u64>,
    /// Bit `c`: client `c` has sent its SET here in the current attempt.
    pub tried: u8,
    /// Bit `c`: and it succeeded.
    pub got: u8,
    /// Bit `c`: a partition stands between client `c` and this node.
    pub cut: u8,
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

impl ClientPhase for RlPhase {
    fn stage(self) -> Stage {
        match self {
            RlPhase::Acquiring => Stage::Queued,
            RlPhase::Critical => Stage::Inside(0),
            RlPhase::Done => Stage::Done,
        }
    }
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
    pub process: Process,
}

impl RlClient {
    /// A client with nothing left to do. Holding or finished, a client's attempt start
    /// and attempts left no longer matter, so they are reset rather than kept: states
    /// that differ only there are one state.
    pub(super) const IDLE: RlClient = RlClient {
        phase: RlPhase::Done,
        t0: 0,
        attempts_left: 0,
        lease_until: None,
        process: Process::RUNNING,
    };
}

/// The system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedlockState {
    /// The clock.
    pub now: u64,
    /// The nodes (inline up to five, the clients up to three: copying a state, as every
    /// successor does, then allocates nothing).
    pub nodes: SmallVec<[RlNode; 5]>,
    /// Client `c` at index `c`, matching bit `c` of each node's `tried` and `got`; the
    /// canonical form reorders clients and renames those bits with them.
    pub clients: SmallVec<[RlClient; 3]>,
    /// Faults left.
    pub budget: Budget,
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
    /// A finished client starts a new attempt (where clients start over).
    Again(u8),
    /// One tick.
    Tick,
    /// Fault: a node crashes, losing its data unless the model is
    /// [`persistent`](RedlockModel::persistent).
    Crash(u8),
    /// The node comes back, empty or with its append-only file's keys.
    Restart(u8),
    /// Fault: a node's clock jumps `ttl` ahead.
    Jump(u8),
    /// Fault: the network splits in two. The nodes in the first mask and the
    /// clients in the second are on one side, every other node and client on the
    /// other; nothing crosses until it heals. Node 0 is always on the first side,
    /// so each split is offered once; the other side may have clients and no node.
    Split(u8, u8),
    /// The partition heals.
    Heal,
    /// Fault: a client pauses.
    Pause(u8),
    /// It resumes.
    Resume(u8),
}

client_faults!(RlAction: Pause, Resume);

/// The value client `c` writes: its name.
pub fn client_value(c: u8) -> String {
    format!("c{c}")
}

impl RedlockModel {
    fn majority(&self) -> usize {
        self.quorum.unwrap_or(self.nodes / 2 + 1)
    }

    /// What the grants a client needs are called in stories: a majority, or the
    /// quorum a user's protocol set.
    pub(super) fn quorum_word(&self) -> &'static str {
        match self.quorum {
            Some(q) if q != self.nodes / 2 + 1 => "quorum",
            _ => "majority",
        }
    }

    /// What client `c` fills a user's step with at `now` on its own clock.
    fn fill(value: &str, ttl: u64, now: u64) -> Fill<'_> {
        Fill {
            key: LOCK_KEY,
            token: value,
            lease_ms: ttl,
            now_ms: now,
            reply: "",
        }
    }

    /// How client `c`'s acquire (or release) on a node reads in a story: the catalog's
    /// `SET NX PX` and compare-and-delete, or the user's step filled in.
    pub(super) fn step_text(&self, c: u8, release: bool, now: u64) -> String {
        let value = client_value(c);
        let cmd = match (self.protocol, release) {
            (Some(d), false) => d.0.acquire_command(0, &Self::fill(&value, self.ttl, now)),
            (Some(d), true) => d.0.release_command(0, &Self::fill(&value, self.ttl, now)),
            (None, false) => return format!("SET lock {value} NX PX {}", self.ttl),
            (None, true) => return format!("EVAL compare-and-delete lock {value}"),
        };
        cmd.map(|c| crate::redis::spec::command_text(&c))
            .unwrap_or_default()
    }

    fn release_all(&self, s: &mut RedlockState, c: usize) {
        let bit = 1u8 << c;
        if let Some(d) = self.protocol {
            // A user's release goes to every node that is up: what it does where the
            // lock is not the client's is the protocol's to say.
            let value = client_value(c as u8);
            let fill = Self::fill(&value, self.ttl, s.now);
            let cmd = d.0.release_command(0, &fill);
            let now = s.now;
            for n in &mut s.nodes {
                if let (None, Some(cmd), 0) = (n.down_since, &cmd, n.cut & bit) {
                    n.server.exec(c as u8, cmd, now + n.offset, true);
                }
                n.tried &= !bit;
                n.got &= !bit;
            }
            return;
        }
        let cmd = RedisCommand::EvalCompareAndDelete {
            key: LOCK_KEY.into(),
            value: client_value(c as u8),
        };
        let now = s.now;
        for n in &mut s.nodes {
            // Only the client's own value can be deleted: other nodes stay shared.
            let holds = n.server.db.live(LOCK_KEY, now + n.offset).is_some();
            if n.down_since.is_none() && n.cut & bit == 0 && holds {
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

    /// Whether `a` can happen in `s`: checked before [`RedlockModel::apply`] copies the
    /// state, since most of the actions a state offers cannot.
    fn enabled(&self, s: &RedlockState, a: &RlAction) -> bool {
        let live = |c: &RlClient| !c.process.paused;
        match *a {
            RlAction::Send(c, i) => {
                let cl = &s.clients[c as usize];
                cl.phase == RlPhase::Acquiring
                    && live(cl)
                    && s.nodes[i as usize].tried & (1u8 << c) == 0
            }
            RlAction::Decide(c) => {
                let cl = &s.clients[c as usize];
                cl.phase == RlPhase::Acquiring
                    && live(cl)
                    && s.nodes.iter().all(|n| n.tried & (1u8 << c) != 0)
            }
            RlAction::Leave(c) => {
                let cl = &s.clients[c as usize];
                cl.phase == RlPhase::Critical && live(cl)
            }
            RlAction::Again(c) => {
                let cl = &s.clients[c as usize];
                cl.phase == RlPhase::Done && live(cl) && self.starts_over(s)
            }
            RlAction::Tick => {
                let kept = s.clients.iter().map(|c| {
                    let running = !c.process.paused && c.phase == RlPhase::Critical;
                    running.then_some(c.lease_until).flatten()
                });
                // Bound: an attempt's SETs all go out within one tick (elapsed 0), which
                // keeps the state space small; validity still subtracts the drift.
                let acquiring: u8 = (0..s.clients.len())
                    .filter(|&c| s.clients[c].phase == RlPhase::Acquiring)
                    .fold(0, |m, c| m | (1 << c));
                let mid_attempt = s.nodes.iter().any(|n| n.tried & acquiring != 0);
                let stop = time::stop(self.horizon, self.tail, || self.pending(s));
                time::may_tick(s.now, stop, kept) && !mid_attempt
            }
            RlAction::Crash(i) => {
                s.budget.has(Fault::Restart)
                    && s.nodes[i as usize].down_since.is_none()
                    && !self.faults_over(s)
            }
            RlAction::Restart(i) => s.nodes[i as usize]
                .down_since
                .is_some_and(|t| s.now >= t + self.restart_delay),
            RlAction::Jump(_) => s.budget.has(Fault::Jump) && !self.faults_over(s),
            RlAction::Split(nodes, clients) => {
                let all_nodes = (1u16 << s.nodes.len()) - 1;
                let everyone = (1u16 << s.clients.len()) - 1;
                // Every node on one side is a split too: the clients on the other are
                // cut off from all of them (a client's partition in a run).
                s.budget.has(Fault::Partition)
                    && !self.faults_over(s)
                    && s.nodes.iter().all(|n| n.cut == 0)
                    && nodes & 1 != 0
                    && u16::from(nodes) <= all_nodes
                    && u16::from(clients) <= everyone
                    && !(u16::from(nodes) == all_nodes && u16::from(clients) == everyone)
            }
            RlAction::Heal => s.nodes.iter().any(|n| n.cut != 0),
            RlAction::Pause(_) | RlAction::Resume(_) => a.client_fault().is_some_and(|(f, c)| {
                let cl = &s.clients[c];
                f.enabled(&cl.process, &s.budget, cl.phase)
                    && !(f.is_fault() && self.faults_over(s))
            }),
        }
    }

    /// Whether faults are over: past the horizon of a model with a tail.
    fn faults_over(&self, s: &RedlockState) -> bool {
        time::faults_over(s.now, self.horizon, self.tail)
    }

    /// Whether some deadline is still ahead: a key's expiry on a node's own clock, a
    /// crashed node's restart, a lease a client believes it holds.
    pub(super) fn pending(&self, s: &RedlockState) -> bool {
        s.nodes.iter().any(|n| {
            let node_now = s.now + n.offset;
            n.down_since.is_some()
                || n.server
                    .db
                    .keys
                    .values()
                    .any(|e| e.deadline.is_some_and(|d| d.hi > node_now))
        }) || s
            .clients
            .iter()
            .any(|c| c.lease_until.is_some_and(|d| d > s.now))
    }

    pub(super) fn apply(&self, st: &RedlockState, a: &RlAction) -> Option<RedlockState> {
        if !self.enabled(st, a) {
            return None;
        }
        let mut s = st.clone();
        match *a {
            RlAction::Send(c, i) => {
                let (c, i) = (c as usize, i as usize);
                let bit = 1u8 << c;
                let n = &mut s.nodes[i];
                n.tried |= bit;
                if n.cut & bit != 0 {
                    // Lost in the partition: the client times out on this node. A
                    // request that arrives and loses only its reply would leave a key
                    // the client does not count, which keeps it out, never lets it in.
                } else if let (None, Some(d)) = (n.down_since, self.protocol) {
                    let value = client_value(c as u8);
                    let fill = Self::fill(&value, self.ttl, s.now);
                    if let Some(cmd) = d.0.acquire_command(0, &fill) {
                        let reply = n.server.exec(c as u8, &cmd, s.now + n.offset, false).0;
                        if d.0.acquired(0, &reply, &fill) == Outcome::Granted {
                            n.got |= bit;
                        }
                    }
                } else if n.down_since.is_none() {
                    let cmd = RedisCommand::Set {
                        key: LOCK_KEY.into(),
                        value: client_value(c as u8),
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
                let got = s.nodes.iter().filter(|n| n.got & bit != 0).count();
                let validity = self.ttl as i64 - (s.now - cl.t0) as i64 - self.drift as i64;
                if got >= self.majority() && validity > 0 {
                    s.clients[c] = RlClient {
                        phase: RlPhase::Critical,
                        lease_until: Some(s.now + validity as u64),
                        ..RlClient::IDLE
                    };
                } else {
                    self.release_all(&mut s, c);
                    let cl = &mut s.clients[c];
                    if cl.attempts_left == 0 {
                        *cl = RlClient::IDLE;
                    } else {
                        cl.attempts_left -= 1;
                        cl.t0 = s.now;
                    }
                }
            }
            RlAction::Leave(c) => {
                let c = c as usize;
                self.release_all(&mut s, c);
                s.clients[c] = RlClient::IDLE;
            }
            RlAction::Again(c) => {
                let c = c as usize;
                s.clients[c] = RlClient {
                    process: s.clients[c].process,
                    ..self.fresh(s.now)
                };
            }
            RlAction::Tick => s.now += 1,
            RlAction::Crash(i) => {
                let n = &mut s.nodes[i as usize];
                s.budget.spend(Fault::Restart);
                n.down_since = Some(s.now);
                if !self.persistent {
                    n.server = NodeRef::empty();
                }
            }
            RlAction::Restart(i) => s.nodes[i as usize].down_since = None,
            RlAction::Jump(i) => {
                s.budget.spend(Fault::Jump);
                s.nodes[i as usize].offset += self.ttl;
            }
            RlAction::Split(nodes, clients) => {
                s.budget.spend(Fault::Partition);
                let everyone = ((1u16 << s.clients.len()) - 1) as u8;
                for (i, n) in s.nodes.iter_mut().enumerate() {
                    let first_side = nodes & (1 << i) != 0;
                    n.cut = if first_side {
                        everyone & !clients
                    } else {
                        clients
                    };
                }
            }
            RlAction::Heal => {
                for n in &mut s.nodes {
                    n.cut = 0;
                }
            }
            RlAction::Pause(_) | RlAction::Resume(_) => {
                if let Some((f, c)) = a.client_fault() {
                    let cl = &mut s.clients[c];
                    f.strike(&mut cl.process, &mut s.budget, cl.phase, || {});
                }
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
                server: NodeRef::empty(),
                offset: 0,
                down_since: None,
                tried: 0,
                got: 0,
                cut: 0,
                name: i as u8,
            })
            .collect();
        let clients = (0..self.clients).map(|_| self.fresh(0)).collect();
        vec![RedlockState {
            now: 0,
            nodes,
            clients,
            budget: self.faults,
        }]
    }

    fn actions(&self, s: &RedlockState, out: &mut Vec<RlAction>) {
        for c in 0..s.clients.len() as u8 {
            for i in 0..s.nodes.len() as u8 {
                out.push(RlAction::Send(c, i));
            }
            out.extend([RlAction::Decide(c), RlAction::Leave(c), RlAction::Again(c)]);
            out.extend(RlAction::client_faults(c));
        }
        out.push(RlAction::Tick);
        for i in 0..s.nodes.len() as u8 {
            out.extend([RlAction::Crash(i), RlAction::Restart(i), RlAction::Jump(i)]);
        }
        // A split names its sides by 8-bit masks: up to 8 nodes and 8 clients.
        if self.faults.has(Fault::Partition) && s.nodes.len() <= 8 && s.clients.len() <= 8 {
            let (nodes, clients) = (1u16 << s.nodes.len(), 1u16 << s.clients.len());
            for n in (1..nodes).step_by(2) {
                out.extend((0..clients).map(|c| RlAction::Split(n as u8, c as u8)));
            }
            out.push(RlAction::Heal);
        }
    }

    fn next_state(&self, s: &RedlockState, a: RlAction) -> Option<RedlockState> {
        self.apply(s, &a).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        invariants(&[Property::MutualExclusion])
    }
}

/// Redlock's rows check mutual exclusion only: there is no resource behind the lock.
impl LockChecks for RedlockModel {
    fn in_critical(&self, s: &RedlockState) -> Vec<usize> {
        inside(&s.clients, |c| c.phase.critical())
    }

    fn resource_safe(&self, _: &RedlockState) -> bool {
        true
    }
}
