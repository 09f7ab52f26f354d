//! The stateright model shared by every etcd lock row: clients on their own lease
//! running a [`Lock`] program against one cluster ([`spec`](super::spec)), with time,
//! keep-alives, lease expiry, leader changes and the fault budget.
//!
//! The state, the actions and the properties read here, as stateright's example
//! protocols are written; a client's step through the recipe is in `model/step.rs`, the
//! other actions' effects in `model/actions.rs`, the words in `narration.rs` and
//! `diagram.rs`, the server's semantics in `spec.rs`.

use std::sync::Arc;

use stateright::Model;

use crate::check::Symmetry;
use crate::kernel::{
    client_faults, inside, invariants, time, Budget, ClientPhase, LockChecks, Process, Stage,
};
use crate::registry::{Fault, Property};
use crate::resource::{Access, Resource};

pub use super::described::DescribedRef;
use super::spec::{
    apply, guarded_by, recipe_key, release_request, Compare, EtcdCommand, EtcdReply, EtcdState,
    LeaseId, COUNTER_KEY, LOCK_KEY, LOCK_PREFIX,
};

mod actions;
mod step;

/// How a client locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lock {
    /// The `concurrency.Mutex` recipe: a session lease, `lock/<lease>` created if
    /// absent, the lowest create revision owns, a waiter waits for the key created just
    /// before its own to go, then checks its own key is still there.
    Recipe,
    /// etcd's server-side `Lock` RPC: the same steps run by the server on the caller's
    /// lease, so they go on while the caller is stopped.
    LockRpc {
        /// The server checks the waiter's own key still exists before granting (the fix
        /// of etcd issue 11456); `false` is the server that grants on an expired lease.
        check_own_key: bool,
    },
    /// One key `lock`: `txn if create_revision(lock) = 0 then put lock --lease`;
    /// released by `del lock`, retried when the reply is lost.
    SingleKey {
        /// The release is `txn if create_revision(lock) = <mine> then del lock`.
        guarded_release: bool,
    },
    /// A user's protocol: its acquire and release requests, after a session lease
    /// where it takes one (see [`crate::protocol::etcd`]).
    Described(DescribedRef),
}

/// What the critical section does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// Read and write a resource outside etcd.
    Outside,
    /// The same, the resource refusing a token below the highest it saw (the token is
    /// the lock key's create revision).
    Fenced,
    /// Read the `counter` key, then write it in a `Txn` guarded by the lock key's create
    /// revision (Jepsen's `lock-etcd-set`).
    TxnGuarded,
}

/// A row's configuration: the lock, the work, the bounds and faults.
#[derive(Clone, Debug)]
pub struct EtcdLockModel {
    /// How clients lock.
    pub lock: Lock,
    /// The critical section's work.
    pub work: Work,
    /// Clients (each locks once, unless `repeat`).
    pub clients: usize,
    /// Lease TTL in ticks.
    pub ttl: u64,
    /// Faults the checker may inject: holder pauses, crashes and partitions, lost
    /// release replies, leader changes, queued waiters' leases revoked.
    pub faults: Budget,
    /// Faults strike before here; the clock stops here unless `tail` says otherwise.
    pub horizon: u64,
    /// Past the horizon, time may run this many ticks further while a lease nobody
    /// keeps alive is still to run out, and faults no longer strike: a progress check's
    /// way to let leases run out ([`crate::progress`]). 0 for safety checks.
    pub tail: u64,
    /// Clients start over when done, and the clock runs for ever past the horizon
    /// ([`crate::kernel::repeat`]): a starvation check's model (`tail` is then
    /// [`crate::kernel::repeat::FOR_EVER`]).
    pub repeat: bool,
    /// Which properties this row checks.
    pub properties: &'static [Property],
    /// A leader change is the leader cut off from the quorum, not killed (the story's
    /// words).
    pub leader_cut: bool,
}

/// Where a client is in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Asking for its session lease.
    Grant,
    /// Creating its key (and learning who owns the lock).
    Create,
    /// Waiting for the key created just before its own to go.
    Wait,
    /// Checking its own key still exists.
    Check,
    /// A described protocol's acquire step `n`.
    Acquire(u8),
    /// Inside the critical section, sub-step `n` (read, then write).
    Critical(u8),
    /// Sending the release (a described protocol's first release step).
    Release,
    /// A described protocol's release step `n` (from 1).
    Unlock(u8),
    /// Sending the release again: the first one's reply was lost.
    Retry,
    /// Finished (or gave up: its session expired).
    Done,
    /// Crashed for good.
    Crashed,
}

impl ClientPhase for Phase {
    fn stage(self) -> Stage {
        match self {
            Phase::Grant => Stage::Running,
            Phase::Create | Phase::Wait | Phase::Check | Phase::Acquire(_) => Stage::Queued,
            Phase::Critical(k) => Stage::Inside(k),
            Phase::Release | Phase::Unlock(_) => Stage::Holding,
            // The first release was sent: as far as the client knows, it let go.
            Phase::Retry => Stage::Running,
            Phase::Done => Stage::Done,
            Phase::Crashed => Stage::Crashed,
        }
    }
}

/// A client process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    /// Program counter.
    pub phase: Phase,
    /// Paused (keep-alives included) or cut off from the cluster.
    pub process: Process,
    /// Its session lease.
    pub lease: Option<LeaseId>,
    /// Its lock key's create revision: its fencing token.
    pub my_rev: u64,
    /// What it read in the critical section.
    pub read: u8,
    /// It gave up because its session expired (or its tries ran out).
    pub lost: bool,
    /// A described protocol's refused tries so far (counted only where its
    /// `attempts` bounds them).
    pub tries: u8,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EtcdLockState {
    /// The cluster's clock.
    pub now: u64,
    /// The cluster, shared with the states it was copied from until a step changes it:
    /// a successor is a copy, and most steps (a tick that expires nothing, a client's
    /// own step, a fault) leave the cluster as it was.
    pub etcd: Arc<EtcdState>,
    /// Client `c` at index `c`: its lock key holds `owner(c)` (`c0`), and every [`Action`]
    /// that names a client names it by `c`.
    pub clients: Vec<Client>,
    /// The resource outside etcd.
    pub resource: Resource,
    /// Guarded `counter` writes that succeeded.
    pub commits: u8,
    /// Faults left.
    pub budget: Budget,
    /// The client that deleted a lock key another client wrote, if any.
    pub foreign_release: Option<u8>,
}

/// What can happen next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A client's next step.
    Step(u8),
    /// A client's keep-alive, sent as its lease is about to run out.
    KeepAlive(u8),
    /// One tick passes; leases due expire.
    Tick,
    /// Fault: the client stops, keep-alives included.
    Pause(u8),
    /// The paused client runs again.
    Resume(u8),
    /// Fault: the client dies.
    Crash(u8),
    /// Fault: the holder's worker hangs for good; its keep-alives go on.
    Hang(u8),
    /// Fault: the client is cut off from the cluster.
    Partition(u8),
    /// The partition heals.
    Heal(u8),
    /// Fault: the client's release takes effect, its reply is lost.
    Drop(u8),
    /// Fault: the leader is killed; a new one restarts every lease's TTL.
    Failover,
    /// Fault: a queued waiter's lease is revoked (`etcdctl lease revoke`), as when it
    /// expires.
    Revoke(u8),
}

/// A step's next state, with the request it sent and its reply.
pub(super) type Effect = crate::kernel::Effect<EtcdLockState, (EtcdCommand, EtcdReply)>;

client_faults!(Action: Pause, Resume, Crash, Partition, Heal, Hang);

/// A client's name, as its lock key's value holds it.
pub fn owner(c: usize) -> String {
    format!("c{c}")
}

impl EtcdLockModel {
    /// Whether time matters: some fault makes a lease run out.
    fn timed(&self) -> bool {
        // Where clients start over, time passes until the horizon, where the faults end
        // and finished clients ask again (without faults that is at once).
        (self.repeat && self.horizon > 0)
            || self.faults.any(&[
                Fault::Pause,
                Fault::Crash,
                Fault::Partition,
                Fault::Failover,
            ])
    }

    fn rpc(&self) -> bool {
        matches!(self.lock, Lock::LockRpc { .. })
    }

    /// The client's lock key.
    pub fn my_key(&self, cl: &Client) -> String {
        match (self.lock, cl.lease) {
            (Lock::SingleKey { .. } | Lock::Described(_), _) | (_, None) => LOCK_KEY.to_string(),
            (_, Some(l)) => recipe_key(l),
        }
    }

    /// Whether the client's step `phase` may run now: a paused or hung client runs
    /// nothing, except that the server runs a `Lock` RPC's queueing for it; a
    /// partitioned one runs only its work outside etcd.
    fn may_step(&self, cl: &Client) -> bool {
        let server_side = self.rpc() && cl.phase.waiting();
        let outside = cl.phase.critical() && self.work != Work::TxnGuarded;
        (cl.process.works() || server_side) && (!cl.process.partitioned || outside)
    }

    fn guarded_release(&self) -> bool {
        matches!(
            self.lock,
            Lock::SingleKey {
                guarded_release: true
            }
        )
    }

    /// The release request.
    pub fn release(&self, key: &str, my_rev: u64) -> EtcdCommand {
        release_request(key, self.guarded_release().then_some(my_rev))
    }

    /// Whether the client keeps its lease alive: it runs, is not stopped and reaches
    /// the cluster. A finished client's lease just runs out.
    fn keeps_alive(cl: &Client) -> bool {
        cl.lease.is_some() && cl.phase.running() && cl.process.connected()
    }

    /// When the client's lease runs out unless kept alive.
    fn lease_deadline(s: &EtcdLockState, cl: &Client) -> Option<u64> {
        let lease = s.etcd.leases.get(&cl.lease?)?;
        Some(lease.deadline.lo)
    }

    /// Time may pass unless a client that keeps its lease alive would lose it: a
    /// keep-alive reaches the cluster in time — the premise the faults break.
    fn may_tick(&self, s: &EtcdLockState) -> bool {
        let kept = s.clients.iter().map(|c| {
            Self::keeps_alive(c)
                .then(|| Self::lease_deadline(s, c))
                .flatten()
        });
        let stop = time::stop(self.horizon, self.tail, || self.pending(s));
        self.timed() && time::may_tick(s.now, stop, kept)
    }

    /// Whether faults are over: past the horizon of a model with a tail.
    fn faults_over(&self, s: &EtcdLockState) -> bool {
        time::faults_over(s.now, self.horizon, self.tail)
    }

    /// Whether a lease nobody keeps alive is still to run out (a lease its client
    /// keeps alive lives as long as the client: its deadline moves, it does not come).
    pub(super) fn pending(&self, s: &EtcdLockState) -> bool {
        s.etcd.leases.iter().any(|(id, lease)| {
            lease.deadline.hi > s.now
                && !s
                    .clients
                    .iter()
                    .any(|c| c.lease == Some(*id) && Self::keeps_alive(c))
        })
    }
}

impl LockChecks for EtcdLockModel {
    /// Clients inside the critical section.
    fn in_critical(&self, s: &EtcdLockState) -> Vec<usize> {
        inside(&s.clients, |c| c.phase.critical())
    }

    /// A lock key no one will ever delete while a client waits: one whose writer no
    /// longer holds it and that is attached to no lease (a lease nobody keeps alive
    /// runs out, however often a new leader restarts it, since the budget of leader
    /// changes is finite), or one whose writer hangs and keeps its lease alive.
    fn orphan(&self, s: &EtcdLockState) -> Option<String> {
        if !s.clients.iter().any(|c| c.phase.waiting()) {
            return None;
        }
        // Or one whose writer's worker hangs while its keep-alives run on: its lease
        // never runs out.
        let hung = s.etcd.keys.iter().find_map(|(k, kv)| {
            let c = (0..s.clients.len()).find(|&c| owner(c) == kv.value)?;
            let cl = &s.clients[c];
            let kept = kv.lease.is_some() && kv.lease == cl.lease && Self::keeps_alive(cl);
            (cl.process.hung && kept).then(|| {
                format!(
                    "key {k} of c{c}, whose worker hangs while its keep-alives keep lease {} alive",
                    kv.lease.unwrap_or(0)
                )
            })
        });
        if hung.is_some() {
            return hung;
        }
        s.etcd
            .keys
            .iter()
            .filter(|(k, _)| k.starts_with(LOCK_PREFIX) || *k == LOCK_KEY)
            .find(|(_, kv)| {
                let writer = (0..s.clients.len()).find(|&c| owner(c) == kv.value);
                let kept = kv.lease.is_some_and(|l| s.etcd.leases.contains_key(&l));
                writer.is_some_and(|c| !s.clients[c].phase.holding()) && !kept
            })
            .map(|(k, kv)| format!("key {k} written by {}", kv.value))
    }

    fn foreign_release(&self, s: &EtcdLockState) -> Option<u8> {
        s.foreign_release
    }

    /// The resource, and the `counter` key only guarded writes that committed.
    fn resource_safe(&self, s: &EtcdLockState) -> bool {
        let counter = s
            .etcd
            .keys
            .get(COUNTER_KEY)
            .and_then(|kv| kv.value.parse::<u8>().ok())
            .unwrap_or(0);
        s.resource.safe() && counter == s.commits
    }
}

impl Model for EtcdLockModel {
    type State = EtcdLockState;
    type Action = Action;

    fn init_states(&self) -> Vec<EtcdLockState> {
        let clients = (0..self.clients).map(|_| self.fresh()).collect();
        vec![EtcdLockState {
            now: 0,
            etcd: Default::default(),
            clients,
            resource: Resource::default(),
            commits: 0,
            budget: self.faults,
            foreign_release: None,
        }]
    }

    fn actions(&self, s: &EtcdLockState, out: &mut Vec<Action>) {
        for c in 0..s.clients.len() as u8 {
            out.extend([Action::Step(c), Action::KeepAlive(c)]);
            out.extend(Action::client_faults(c));
            out.extend([Action::Drop(c), Action::Revoke(c)]);
        }
        out.push(Action::Tick);
        out.push(Action::Failover);
    }

    fn next_state(&self, s: &EtcdLockState, a: Action) -> Option<EtcdLockState> {
        self.effect(s, &a).map(|e| e.state).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        invariants(self.properties)
    }
}

/// Every state stored as it is: clients' names are in the server's lock keys and leases, so
/// renaming clients would mean renaming those too.
impl Symmetry for EtcdLockModel {}
