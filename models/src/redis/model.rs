//! The stateright model shared by every `redis-*` scenario.
//!
//! The state, the actions and the properties read here, as stateright's example
//! protocols are written; a client's step phase by phase is in `model/step.rs`, the
//! other actions' effects in `model/actions.rs`, the words in `narration.rs` and
//! `diagram.rs`, the server's semantics in `spec.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};
use stateright::Model;

use crate::check::FastHash;

use crate::kernel::{
    client_faults, inside, invariants, time, Budget, ClientPhase, LockChecks, Process, Stage,
};
use crate::redis::spec::{RedisCommand, RedisReply};
use crate::registry::{Fault, Property};
use crate::resource::{Access, Resource};

use super::keys::LOCK_KEY;
use super::protocol::{self, Acquired, Protocol, Said, ValueKind};
use super::shared_nodes::NodeRef;
use super::topology;
use super::values::Text;
use crate::protocol::outcome::OnBusy;

mod actions;
mod step;

/// The sub-step of a section whose nested `lock()` was refused by the holder's own key
/// and tries again ([`RedisLockModel::reenters`]).
const WAITING_FOR_ITSELF: u8 = 3;

/// A scenario's configuration: protocol, topology, time and fault budget.
#[derive(Clone, Debug)]
pub struct RedisLockModel {
    /// How clients lock.
    pub protocol: Protocol,
    /// What they write as identity.
    pub value: ValueKind,
    /// Number of clients (each locks once, unless `repeat`).
    pub clients: usize,
    /// Lease in ticks (ms).
    pub ttl: u64,
    /// Replicas behind the master (0: a single node).
    pub replicas: usize,
    /// `WAIT n` after acquiring, before entering.
    pub wait: Option<u32>,
    /// Take an `INCR` fencing token and present it to the resource.
    pub fencing: bool,
    /// The section calls `lock()` on the same lock again (a nested method), waiting as
    /// `lock()` waits until it is granted, then unlocks it before the outer work goes
    /// on. A reentrant protocol counts the second hold; any other waits for itself.
    pub reenters: bool,
    /// Faults the checker may inject: process pauses (GC), client crashes, Sentinel
    /// failovers, a split brain.
    pub faults: Budget,
    /// Ticks the master must have been cut off before Sentinel promotes a replica
    /// (`down-after-milliseconds`), in a model with the split fault; a failover of a
    /// crashed master is not timed (any instant).
    pub down_after: u64,
    /// `min-replicas-to-write 1` with `min-replicas-max-lag` this many ticks: a master
    /// cut off from its replicas for longer refuses writes (`NOREPLICAS`).
    pub min_replicas_lag: Option<u64>,
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
    /// Which properties this scenario checks.
    pub properties: &'static [Property],
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    /// Program counter.
    pub phase: Phase,
    /// Stopped by a pause fault.
    pub process: Process,
    /// The value / hash field it writes.
    pub value: Text,
    /// Until when it believes it holds the lock.
    pub lease_until: Lease,
    /// Its fencing token.
    pub token: i64,
    /// What it read from the resource.
    pub read: u8,
    /// The failover epoch its pending `WAIT` belongs to, and the offset to wait for.
    pub wait_for: (u8, u32),
    /// The reply a user protocol's next step reads as `{reply}`, by its number
    /// ([`Text::of`]; 0, the empty reply, for every other protocol). A number, not
    /// the text: every state of every Redis row carries it for each client.
    pub reply: Text,
    /// Refused attempts so far, where the protocol bounds them (else 0).
    pub refused: u8,
}

/// Until when a client believes it holds the lock, if it believes so: 8 bytes where an
/// `Option<u64>` takes 16, in every client of every state a search stores.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lease(u64);

impl Lease {
    /// No lease.
    pub const NONE: Lease = Lease(0);

    /// A lease until time `t`.
    pub fn until(t: u64) -> Lease {
        // Kept as `t + 1`, so 0 is none; a search's clock never comes near u64::MAX.
        Lease(t.saturating_add(1))
    }

    /// Until when, if any.
    pub fn get(self) -> Option<u64> {
        self.0.checked_sub(1)
    }
}

impl From<Option<u64>> for Lease {
    fn from(t: Option<u64>) -> Lease {
        t.map_or(Lease::NONE, Lease::until)
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

// A state holds every client inline and a search copies and hashes it at each step.
const _: () = assert!(std::mem::size_of::<Client>() <= 40);

/// The whole system.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedisLockState {
    /// The clock.
    pub now: u64,
    /// Master and replicas, each the one copy of an equal node ([`NodeRef`]): a state
    /// costs a few pointers rather than a copy of every keyspace and replication stream.
    pub nodes: SmallVec<[NodeRef; 4]>,
    /// Index of the current master.
    pub master: u8,
    /// Failovers so far.
    pub epoch: u8,
    /// Writes since the current master was promoted.
    pub offset: u32,
    /// The clients (inline up to four: copying a state allocates nothing then).
    pub clients: SmallVec<[Client; 4]>,
    /// The counter outside Redis that holders read, then write back plus one: two holders
    /// at once lose an update.
    pub resource: Resource,
    /// Faults left.
    pub budget: Budget,
    /// The client that released someone else's lock, if any.
    pub foreign_release: Option<u8>,
    /// The client whose re-entry was refused, or whose lock was freed with holds left.
    pub reentrancy_broken: Option<u8>,
    /// The client refused by a master that held no key at all.
    pub refused_free: Option<u8>,
    /// The split brain in force, if any.
    pub split: Option<Split>,
}

/// A split brain: the master of the moment and one client cut off from the Sentinels,
/// the replicas and the other clients. The isolated side runs on: that client keeps
/// talking to that node, which keeps answering as a master.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Split {
    /// The isolated node (the master when the cut came).
    pub node: u8,
    /// The client on its side.
    pub client: u8,
    /// When the cut came.
    pub since: u64,
}

/// Copies the nodes and clients as plain memory (both are `Copy`): a search clones a
/// state for every successor, and a derived clone copies them one element at a time.
impl Clone for RedisLockState {
    fn clone(&self) -> Self {
        RedisLockState {
            nodes: SmallVec::from_slice(&self.nodes),
            clients: SmallVec::from_slice(&self.clients),
            ..*self
        }
    }
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
    /// Fault: the holder's worker hangs for good; its watchdog runs on.
    Hang(u8),
    /// Fault: Sentinel promotes this replica.
    Failover(u8),
    /// Fault: the master and this client are cut off from the Sentinels, the replicas
    /// and the other clients.
    Split(u8),
    /// The split around this client heals: a demoted old master rejoins as a replica of
    /// the new one (a full sync: what it granted alone is gone); a master that kept its
    /// place resynchronises its replicas.
    Heal(u8),
}

/// A step's next state, with the command it sent and its reply.
pub(super) type Effect = crate::kernel::Effect<RedisLockState, (Rc<RedisCommand>, RedisReply)>;

/// What a step sent and got back, kept only where a story asks for it (a search does
/// not, and spares the copies).
type Sent = Option<(Rc<RedisCommand>, RedisReply)>;

client_faults!(Action: Pause, Resume, Crash, Hang);

/// Where a step notes what it sent, if anywhere.
struct Log<'a>(Option<&'a mut Sent>);

impl Log<'_> {
    fn note(&mut self, cmd: &Rc<RedisCommand>, reply: impl FnOnce() -> RedisReply) {
        if let Some(sent) = &mut self.0 {
            **sent = Some((Rc::clone(cmd), reply()));
        }
    }
}

/// Which command of its program a client sends.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Request {
    Acquire(u8),
    Release(u8),
    Fence,
    Renew,
    Wait(u32),
}

/// A command's identity: its request, the protocol, the client's value and the reply
/// it fills in (by address: both are kept once, [`Text::text`]) and the lease.
type CommandKey = (Request, Protocol, (usize, usize), (usize, usize), u64);

thread_local! {
    /// Every command built on this thread (see [`RedisLockModel::command`]).
    static COMMANDS: RefCell<HashMap<CommandKey, Option<Rc<RedisCommand>>, FastHash>> =
        RefCell::default();
}

impl ClientPhase for Phase {
    fn stage(self) -> Stage {
        match self {
            Phase::Idle => Stage::Running,
            Phase::Acquire(_) => Stage::Queued,
            Phase::Wait | Phase::Fence | Phase::Release(_) => Stage::Holding,
            Phase::Critical(k) => Stage::Inside(k),
            Phase::Done => Stage::Done,
            Phase::Crashed => Stage::Crashed,
        }
    }

    /// Also past the first command of a multi-command acquire: a crash there leaves
    /// `SETNX` without its `EXPIRE`.
    fn started(self) -> bool {
        self.holding() || matches!(self, Phase::Acquire(k) if k > 0)
    }
}

impl RedisLockModel {
    pub(super) fn value_of(&self, c: usize) -> Text {
        match self.value {
            ValueKind::Unique if self.protocol == Protocol::Redisson => {
                Text::of(&format!("c{c}:t1"))
            }
            ValueKind::Unique => Text::of(&format!("c{c}")),
            ValueKind::ThreadId => Text::of("t1"),
            ValueKind::Timestamp => Text::EMPTY,
        }
    }

    /// The command of `request` for a client writing `value` (`None`: the release is
    /// over), built once per thread: a search sends the same few commands millions of
    /// times, and building one allocates its strings.
    fn command(&self, request: Request, said: Said<'static>, now: u64) -> Option<Rc<RedisCommand>> {
        if protocol::uses_now(self.protocol) {
            return self.make(request, said, now).map(Rc::new);
        }
        let at = |v: &str| (v.as_ptr() as usize, v.len());
        let key = (
            request,
            self.protocol,
            at(said.value),
            at(said.reply),
            self.ttl,
        );
        if let Some(known) = COMMANDS.with_borrow(|m| m.get(&key).cloned()) {
            return known;
        }
        let made = self.make(request, said, 0).map(Rc::new);
        COMMANDS.with_borrow_mut(|m| m.insert(key, made.clone()));
        made
    }

    fn make(&self, request: Request, said: Said<'_>, now: u64) -> Option<RedisCommand> {
        let (p, ttl) = (self.protocol, self.ttl);
        match request {
            Request::Acquire(k) => protocol::acquire(p, k, said, ttl, now),
            Request::Release(k) => protocol::release(p, k, said, ttl, now),
            Request::Fence => Some(protocol::fence()),
            Request::Renew => protocol::renew(p, said, ttl, now),
            Request::Wait(n) => Some(protocol::wait(n)),
        }
    }

    fn after_acquire(&self) -> Phase {
        if self.wait.is_some() {
            Phase::Wait
        } else if self.fencing && !matches!(self.protocol, Protocol::Described(_)) {
            Phase::Fence
        } else {
            Phase::Critical(0)
        }
    }

    /// The node client `c` reaches: the master, or the isolated node for the client
    /// on its side of a split; `None` while a split cuts it off from the only master
    /// (its request times out, and it tries again).
    pub(super) fn target(s: &RedisLockState, c: usize) -> Option<usize> {
        match s.split {
            Some(x) if x.client as usize == c => Some(x.node as usize),
            Some(x) if x.node == s.master => None,
            _ => Some(s.master as usize),
        }
    }

    /// Whether node `m` refuses writes now under `min-replicas-to-write 1` (set on
    /// every server, as one configuration file is): the isolated node once it has been
    /// cut off from its replicas for longer than `min-replicas-max-lag`; a master with
    /// no replica at all (a promoted one whose only peer is cut off) at once.
    fn no_replicas(&self, s: &RedisLockState, m: usize) -> bool {
        let Some(lag) = self.min_replicas_lag else {
            return false;
        };
        match s.split {
            Some(x) if x.node as usize == m => s.now > x.since + lag,
            _ => !s
                .nodes
                .iter()
                .enumerate()
                .any(|(i, n)| i != m && n.up && s.split.is_none_or(|x| x.node as usize != i)),
        }
    }

    fn send(
        &self,
        s: &mut RedisLockState,
        c: usize,
        cmd: &RedisCommand,
        release: bool,
    ) -> RedisReply {
        let Some(m) = Self::target(s, c) else {
            return RedisReply::Error("timeout: the master is cut off".into());
        };
        if cmd.is_write() && self.no_replicas(s, m) {
            return RedisReply::Error("NOREPLICAS Not enough good replicas to write.".into());
        }
        let before = s.nodes[m];
        let (reply, foreign) = s.nodes[m].exec(c as u8, cmd, s.now, release);
        // `exec` changes the creator only with the keyspace, and nothing else.
        let changed = s.nodes[m] != before;
        if foreign && s.foreign_release.is_none() {
            s.foreign_release = Some(c as u8);
        }
        // Like Redis, only writes that changed the keyspace enter the stream (a refused
        // SET NX is not replicated), so busy retries do not grow the offset.
        // An isolated node's writes reach no replica: the cut.
        let isolated = s.split.is_some_and(|x| x.node as usize == m);
        if cmd.is_write() && changed && !isolated {
            s.offset += 1;
            topology::propagate(&mut s.nodes, m, cmd, s.now, c as u8);
        }
        reply
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
        let kept = s.clients.iter().map(|c| {
            // A holder waiting for itself in a nested lock() cannot finish in time: the
            // premise does not hold for it, and its lease may run out.
            let running = !c.process.paused
                && c.phase.holding()
                && (!c.process.hung || self.watchdog_runs(c))
                && c.phase != Phase::Critical(WAITING_FOR_ITSELF);
            running.then_some(c.lease_until.get()).flatten()
        });
        let stop = time::stop(self.horizon, self.tail, || self.pending(s));
        time::may_tick(s.now, stop, kept)
    }

    /// Whether a finished client asks for the lock again: where clients start over, once
    /// the faults are over (before, each locks once, as in every other check: the
    /// bound that keeps the faults' part of the graph finite).
    fn starts_over(&self, s: &RedisLockState) -> bool {
        crate::kernel::repeat::starts_over(self.repeat, s.now, self.horizon)
    }

    /// Whether faults are over: past the horizon of a model with a tail.
    fn faults_over(&self, s: &RedisLockState) -> bool {
        time::faults_over(s.now, self.horizon, self.tail)
    }

    /// Whether a holder's nested `lock()` waits for the lock it holds: the section
    /// re-enters a protocol that does not count holds.
    fn waits_for_itself(&self) -> bool {
        self.reenters && !protocol::reentrant(self.protocol)
    }

    /// Whether client `cl`'s watchdog renews its lease: the protocol has one, and the
    /// process runs (a hung worker's watchdog runs on; a paused process's does not).
    fn watchdog_runs(&self, cl: &Client) -> bool {
        protocol::renews(self.protocol) && !cl.process.paused && cl.phase.critical()
    }

    /// The hung holder whose watchdog keeps `e` alive, if any: its deadline moves with
    /// time and never comes, as a ZooKeeper session its client pings.
    fn kept_by_hung(&self, s: &RedisLockState, e: &crate::redis::spec::Entry) -> Option<usize> {
        s.clients.iter().position(|c| {
            c.process.hung
                && self.watchdog_runs(c)
                && match &e.value {
                    crate::redis::spec::Value::Hash(h) => h.contains_key(c.value.text()),
                    crate::redis::spec::Value::Str(v) => v == c.value.text(),
                }
        })
    }

    /// Whether some deadline is still ahead: a key's expiry on any node, a timestamp
    /// a client wrote as the lock's value, a lease a client believes it holds — but
    /// none a hung holder's watchdog keeps moving.
    pub(super) fn pending(&self, s: &RedisLockState) -> bool {
        let keys = s.nodes.iter().flat_map(|n| n.db.keys.values());
        let ahead = |e: &crate::redis::spec::Entry| {
            (e.deadline.is_some_and(|d| d.hi > s.now) && self.kept_by_hung(s, e).is_none())
                || matches!(&e.value, crate::redis::spec::Value::Str(v)
                    if self.value == ValueKind::Timestamp && v.parse::<u64>().is_ok_and(|t| t > s.now))
        };
        keys.clone().any(ahead)
            || s.clients.iter().any(|c| {
                c.lease_until.get().is_some_and(|d| d > s.now)
                    && !(c.process.hung && self.watchdog_runs(c))
            })
    }

    /// What `a` does to `st`, and the command it sent with its reply.
    pub(super) fn effect(&self, st: &RedisLockState, a: &Action) -> Option<Effect> {
        let mut sent = None;
        let state = self.successor(st, a, &mut Log(Some(&mut sent)))?;
        Some(Effect { state, sent })
    }

    /// Whether the master holds no key but the fencing counter: nothing any client
    /// could be refused for.
    fn holds_nothing(s: &RedisLockState, c: usize) -> bool {
        let Some(m) = Self::target(s, c) else {
            return false;
        };
        let db = &s.nodes[m].db;
        db.keys
            .keys()
            .all(|k| k == super::keys::FENCE_KEY || db.live(k, s.now).is_none())
    }

    /// Whether the lock key is live on the master.
    fn lock_live(&self, s: &RedisLockState) -> bool {
        s.nodes[s.master as usize]
            .db
            .live(LOCK_KEY, s.now)
            .is_some()
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

impl LockChecks for RedisLockModel {
    fn in_critical(&self, s: &RedisLockState) -> Vec<usize> {
        inside(&s.clients, |c| c.phase.critical())
    }

    fn foreign_release(&self, s: &RedisLockState) -> Option<u8> {
        s.foreign_release
    }

    fn orphan(&self, s: &RedisLockState) -> Option<String> {
        let waiting = s.clients.iter().any(|c| c.phase.waiting());
        let master = s.nodes.iter().flat_map(|n| n.db.keys.values());
        if let Some(c) = master
            .filter(|_| waiting)
            .find_map(|e| self.kept_by_hung(s, e))
        {
            return Some(format!(
                "c{c}'s lock, renewed by its watchdog while its worker hangs"
            ));
        }
        if let Some(c) = s.refused_free {
            return Some(format!(
                "c{c} was refused by a master holding no key at all: the lock turns clients away when nobody holds it"
            ));
        }
        Self::deadlocked(s).then(|| "a lock without TTL set by a crashed client".to_string())
    }

    fn resource_safe(&self, s: &RedisLockState) -> bool {
        s.resource.safe()
    }

    fn reentrancy_broken(&self, s: &RedisLockState) -> Option<u8> {
        s.reentrancy_broken
    }
}

impl Model for RedisLockModel {
    type State = RedisLockState;
    type Action = Action;

    fn init_states(&self) -> Vec<RedisLockState> {
        let clients = (0..self.clients).map(|c| self.fresh(c)).collect();
        vec![RedisLockState {
            now: 0,
            nodes: smallvec![NodeRef::empty(); 1 + self.replicas],
            master: 0,
            epoch: 0,
            offset: 0,
            clients,
            resource: Resource::default(),
            budget: self.faults,
            foreign_release: None,
            reentrancy_broken: None,
            refused_free: None,
            split: None,
        }]
    }

    fn actions(&self, s: &RedisLockState, out: &mut Vec<Action>) {
        for c in 0..s.clients.len() as u8 {
            out.push(Action::Step(c));
            out.push(Action::Renew(c));
            out.extend(Action::client_faults(c));
        }
        out.push(Action::Tick);
        for r in 0..s.nodes.len() as u8 {
            out.push(Action::Replicate(r));
            out.push(Action::Failover(r));
        }
        if self.faults.has(Fault::Split) {
            out.extend((0..s.clients.len() as u8).map(Action::Split));
            out.extend((0..s.clients.len() as u8).map(Action::Heal));
        }
    }

    fn next_state(&self, s: &RedisLockState, a: Action) -> Option<RedisLockState> {
        self.successor(s, &a, &mut Log(None)).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        invariants(self.properties)
    }
}
