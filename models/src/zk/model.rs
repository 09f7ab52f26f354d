//! The stateright model shared by every ZooKeeper lock row: clients with their own
//! session running the ephemeral-sequential recipe against one ensemble
//! ([`spec`](super::spec)), with time, pings, session expiry, watches and the fault
//! budget.
//!
//! The state, the actions and the properties read here, as stateright's example
//! protocols are written; a client's step through the recipe is in `model/step.rs`, the
//! other actions' effects in `model/actions.rs`, the words in `narration.rs` and
//! `diagram.rs`, the server's semantics in `spec.rs`.

use std::sync::Arc;

use stateright::Model;

use crate::check::Symmetry;
use crate::kernel::{
    client_faults, inside, invariants, time, Budget, ClientFault, ClientPhase, LockChecks, Process,
    Stage,
};
use crate::registry::{Fault, Property};
use crate::resource::{Access, Resource};

use super::spec::{
    apply, sequence, SessionId, ZkCommand, ZkError, ZkReply, ZkState, COUNTER, LOCK_DIR,
};

mod actions;
mod step;

/// What a waiter watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchOn {
    /// The node just before its own (`exists(predecessor, watch)`): one wake-up per
    /// release.
    Predecessor,
    /// The lock's parent (`getChildren(/lock, watch)`): every waiter wakes at every
    /// release, the herd.
    Parent,
}

/// How the recipe is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Recipe {
    /// What a waiter watches.
    pub watch_on: WatchOn,
    /// The node name carries the client's id (`/lock/c0-n-…`, Curator's protection), so
    /// a create retried after a lost reply first looks for a node it already made;
    /// `false` retries blindly.
    pub protected: bool,
    /// The holder stops as soon as its connection is suspended (before the session can
    /// have expired); `false` stops only when told the session is lost, which a
    /// partitioned client hears when it reaches the ensemble again.
    pub stop_at_suspended: bool,
    /// Each client creates its own sequential node and the lowest owns (the recipe);
    /// `false` is the plain-znode spin lock: every client creates the one node
    /// [`PLAIN_NODE`], the create that succeeds owns, the others watch that node and
    /// try again when it goes (`watch_on` and `protected` then do not apply).
    pub sequential: bool,
}

/// The one node of the plain-znode lock, under `/lock`.
pub const PLAIN_NODE: &str = "holder";

impl Recipe {
    /// Curator's `InterProcessMutex` as its documentation asks it used: predecessor
    /// watch, protected create, SUSPENDED treated as lost.
    pub const CURATOR: Recipe = Recipe {
        watch_on: WatchOn::Predecessor,
        protected: true,
        stop_at_suspended: true,
        sequential: true,
    };
}

/// What the critical section does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// Read and write a resource outside ZooKeeper.
    Outside,
    /// The same, the resource refusing a token below the highest it saw (the token is
    /// the lock node's czxid).
    Fenced,
    /// Read `/counter`, then write it as `multi(check(lock node), setData(/counter))`.
    MultiChecked,
}

/// A row's configuration: the recipe, the work, the bounds and faults.
#[derive(Clone, Debug)]
pub struct ZkLockModel {
    /// How clients lock.
    pub recipe: Recipe,
    /// The critical section's work.
    pub work: Work,
    /// Clients (each locks once, unless `repeat`).
    pub clients: usize,
    /// Session timeout in ticks.
    pub timeout: u64,
    /// Faults the checker may inject: holder pauses, crashes and partitions, lost
    /// create replies.
    pub faults: Budget,
    /// Faults strike before here; the clock stops here unless `tail` says otherwise.
    pub horizon: u64,
    /// Past the horizon, time may run this many ticks further while a session nobody
    /// keeps alive is still to expire, and faults no longer strike: a progress check's
    /// way to let sessions run out ([`crate::progress`]). 0 for safety checks.
    pub tail: u64,
    /// Clients start over when done, and the clock runs for ever past the horizon
    /// ([`crate::kernel::repeat`]): a starvation check's model (`tail` is then
    /// [`crate::kernel::repeat::FOR_EVER`]).
    pub repeat: bool,
    /// Which properties this row checks.
    pub properties: &'static [Property],
}

/// Where a client is in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Opening its session.
    Connect,
    /// Creating its ephemeral sequential node.
    Create,
    /// A protected create's retry: looking for the node the lost reply made.
    Find,
    /// Listing the lock's children to see whether it is lowest.
    List,
    /// Setting a watch on its predecessor.
    Watch,
    /// Waiting for a watch to fire.
    Wait,
    /// Inside the critical section, sub-step `n` (read, then write).
    Critical(u8),
    /// Deleting its node.
    Release,
    /// Finished (or gave up: its session expired or its connection was suspended).
    Done,
    /// Crashed for good.
    Crashed,
}

impl ClientPhase for Phase {
    fn stage(self) -> Stage {
        match self {
            Phase::Connect | Phase::Create | Phase::Find => Stage::Running,
            Phase::List | Phase::Watch | Phase::Wait => Stage::Queued,
            Phase::Critical(k) => Stage::Inside(k),
            Phase::Release => Stage::Holding,
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
    /// Paused (pings included) or cut off from the ensemble.
    pub process: Process,
    /// Its session.
    pub session: Option<SessionId>,
    /// Its lock node's name under `/lock`, as far as it knows.
    pub node: Option<String>,
    /// Its node's czxid: its fencing token.
    pub token: u64,
    /// The node it watches.
    pub pred: Option<String>,
    /// What it read in the critical section.
    pub read: u8,
    /// It gave up: its session expired, or it stopped at a suspended connection.
    pub lost: bool,
    /// Watch notifications it has been woken by.
    pub wakeups: u8,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZkLockState {
    /// The ensemble's clock.
    pub now: u64,
    /// The ensemble, shared with the states it was copied from until a step changes it:
    /// a successor is a copy, and most steps (a tick that expires nothing, a client's
    /// own step, a fault) leave the ensemble as it was.
    pub zk: Arc<ZkState>,
    /// Client `c` at index `c`: every [`Action`] that names a client names it by `c`.
    pub clients: Vec<Client>,
    /// The resource outside ZooKeeper.
    pub resource: Resource,
    /// `multi`-checked `/counter` writes that succeeded.
    pub commits: u8,
    /// Faults left.
    pub budget: Budget,
}

/// What can happen next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A client's next step.
    Step(u8),
    /// A client's ping, sent as its session is about to time out.
    Ping(u8),
    /// One tick passes; sessions due expire.
    Tick,
    /// Fault: the holder stops, pings included.
    Pause(u8),
    /// The paused client runs again.
    Resume(u8),
    /// Fault: the holder dies.
    Crash(u8),
    /// Fault: the holder's worker hangs for good; its pings go on.
    Hang(u8),
    /// Fault: the holder is cut off from the ensemble.
    Partition(u8),
    /// A partitioned holder's connection is suspended and it stops working.
    Suspend(u8),
    /// The partition heals; a client whose session expired meanwhile is told it is lost.
    Heal(u8),
    /// Fault: the client's create takes effect, its reply is lost.
    Drop(u8),
    /// Fault: the leader is cut off from the quorum; the others elect a new leader,
    /// which gives every session a fresh timeout.
    Failover,
    /// Fault: the leader's clock leaps ahead, and the sessions of the clients in the
    /// mask (bit `c`: client `c`'s), which had not pinged since, expire at once —
    /// however recently their clients heard from the ensemble. Which ones is a race
    /// with each client's next ping, so any of them may.
    Jump(u8),
}

/// A step's next state, with the request it sent and its reply.
pub(super) type Effect = crate::kernel::Effect<ZkLockState, (ZkCommand, ZkReply)>;

client_faults!(Action: Pause, Resume, Crash, Partition, Heal, Hang);

/// The path of a node under `/lock`.
pub fn lock_path(name: &str) -> String {
    format!("{LOCK_DIR}/{name}")
}

impl ZkLockModel {
    /// The sessions a jump of the leader's clock expires: those of the clients in
    /// `mask` that have one.
    fn jumped(s: &ZkLockState, mask: u8) -> Vec<SessionId> {
        s.clients
            .iter()
            .enumerate()
            .filter(|(c, _)| mask & (1 << c) != 0)
            .filter_map(|(_, cl)| cl.session)
            .filter(|id| s.zk.sessions.contains_key(id))
            .collect()
    }

    /// Whether time matters: some fault makes a session time out.
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

    /// The prefix the client's create asks for.
    pub fn prefix(&self, c: usize) -> String {
        if self.recipe.protected {
            lock_path(&format!("c{c}-n-"))
        } else {
            lock_path("n-")
        }
    }

    /// A paused or hung client runs nothing; a partitioned one only its work outside
    /// ZooKeeper.
    fn may_step(&self, cl: &Client) -> bool {
        let outside = cl.phase.critical() && self.work != Work::MultiChecked;
        cl.process.works() && (!cl.process.partitioned || outside)
    }

    /// Where a waiter goes when what it watched is gone: list the queue again, or (the
    /// plain node) create again.
    fn try_again(&self) -> Phase {
        if self.recipe.sequential {
            Phase::List
        } else {
            Phase::Create
        }
    }

    /// The client stops: its session expired (or its node is gone with it).
    fn give_up(&self, s: &mut ZkLockState, c: usize) -> Phase {
        s.clients[c].lost = true;
        Phase::Done
    }

    /// Whether the client keeps its session alive: it runs, is not stopped and reaches
    /// the ensemble. A finished client's session just times out.
    fn keeps_alive(cl: &Client) -> bool {
        cl.session.is_some() && cl.phase.running() && cl.process.connected()
    }

    /// When the client's session expires unless a ping arrives first.
    fn session_deadline(s: &ZkLockState, cl: &Client) -> Option<u64> {
        let session = s.zk.sessions.get(&cl.session?)?;
        Some(session.deadline.lo)
    }

    /// The session of a partitioned holder that stops at "suspended" must not expire
    /// before it has stopped: the client's read timeout (2/3 of the session timeout)
    /// comes first — the premise of Curator's advice.
    fn must_suspend_first(&self, cl: &Client) -> bool {
        self.recipe.stop_at_suspended && cl.process.partitioned && cl.phase.holding()
    }

    /// A connected holder whose session the ensemble expired (a leap of the leader's
    /// clock) hears SUSPENDED as the server closes its connection: it stops, if it
    /// stops at SUSPENDED — but only after its session and node are gone, so the next
    /// waiter may be in first.
    fn told_after_expiry(&self, s: &ZkLockState, cl: &Client) -> bool {
        self.recipe.stop_at_suspended
            && cl.phase.holding()
            && cl.process.works()
            && cl.process.connected()
            && cl
                .session
                .is_some_and(|id| !s.zk.sessions.contains_key(&id))
    }

    /// Time may pass unless a client that pings would lose its session, or a holder
    /// that stops at "suspended" has not stopped yet before its session would expire.
    fn may_tick(&self, s: &ZkLockState) -> bool {
        let kept = s.clients.iter().map(|c| {
            let kept = Self::keeps_alive(c) || self.must_suspend_first(c);
            kept.then(|| Self::session_deadline(s, c)).flatten()
        });
        let stop = time::stop(self.horizon, self.tail, || self.pending(s));
        self.timed() && time::may_tick(s.now, stop, kept)
    }

    /// Whether faults are over: past the horizon of a model with a tail.
    fn faults_over(&self, s: &ZkLockState) -> bool {
        time::faults_over(s.now, self.horizon, self.tail)
    }

    /// Whether a session nobody keeps alive is still to expire (a session its client
    /// pings lives as long as the client: its deadline moves, it does not come).
    pub(super) fn pending(&self, s: &ZkLockState) -> bool {
        s.zk.sessions.iter().any(|(id, session)| {
            session.deadline.hi > s.now
                && !s
                    .clients
                    .iter()
                    .any(|c| c.session == Some(*id) && Self::keeps_alive(c))
        })
    }
}

impl ZkLockModel {
    /// The node of a hung holder whose pings keep its session, while a client waits.
    fn held_by_hung(&self, s: &ZkLockState) -> Option<String> {
        if !s.clients.iter().any(|c| c.phase.waiting()) {
            return None;
        }
        let (c, cl) = s
            .clients
            .iter()
            .enumerate()
            .find(|(_, cl)| cl.process.hung && Self::keeps_alive(cl))?;
        let node = cl.node.as_deref()?;
        s.zk.nodes.get(&lock_path(node))?;
        Some(format!(
            "{} (c{c}'s, whose worker hangs while its pings keep session {} alive)",
            lock_path(node),
            cl.session.unwrap_or(0)
        ))
    }
}

impl LockChecks for ZkLockModel {
    /// Clients inside the critical section.
    fn in_critical(&self, s: &ZkLockState) -> Vec<usize> {
        inside(&s.clients, |c| c.phase.critical())
    }

    /// A lock node nothing will ever delete while a client waits: no client knows it as
    /// its own, yet its session is kept alive by a running client; or its owner's
    /// worker hangs while the pings keep its session.
    fn orphan(&self, s: &ZkLockState) -> Option<String> {
        if let Some(held) = self.held_by_hung(s) {
            return Some(held);
        }
        if !s.clients.iter().any(|c| c.phase.waiting()) {
            return None;
        }
        s.zk.children(LOCK_DIR)
            .into_iter()
            .find(|(name, _)| {
                let node = s.zk.nodes.get(&lock_path(name));
                let owner = s.clients.iter().position(|c| {
                    c.session.is_some() && node.and_then(|n| n.ephemeral_owner) == c.session
                });
                // A protected retry still looking for its node will adopt it.
                owner.is_some_and(|o| {
                    let cl = &s.clients[o];
                    Self::keeps_alive(cl)
                        && cl.phase != Phase::Find
                        && cl.node.as_deref() != Some(name.as_str())
                })
            })
            .map(|(name, _)| {
                let owner =
                    s.zk.nodes
                        .get(&lock_path(&name))
                        .and_then(|n| n.ephemeral_owner)
                        .unwrap_or(0);
                format!("{} (ephemeral of live session {owner})", lock_path(&name))
            })
    }

    /// The resource, and `/counter` only `multi`-checked writes that committed.
    fn resource_safe(&self, s: &ZkLockState) -> bool {
        let counter =
            s.zk.nodes
                .get(COUNTER)
                .and_then(|n| n.data.parse::<u8>().ok())
                .unwrap_or(0);
        s.resource.safe() && counter == s.commits
    }
}

impl Model for ZkLockModel {
    type State = ZkLockState;
    type Action = Action;

    fn init_states(&self) -> Vec<ZkLockState> {
        let clients = (0..self.clients).map(|_| self.fresh()).collect();
        let zk = if self.work == Work::MultiChecked {
            ZkState::with_persistent(COUNTER, "0")
        } else {
            ZkState::default()
        };
        vec![ZkLockState {
            now: 0,
            zk: zk.into(),
            clients,
            resource: Resource::default(),
            commits: 0,
            budget: self.faults,
        }]
    }

    fn actions(&self, s: &ZkLockState, out: &mut Vec<Action>) {
        for c in 0..s.clients.len() as u8 {
            out.extend([Action::Step(c), Action::Ping(c)]);
            out.extend(Action::client_faults(c));
            out.extend([Action::Suspend(c), Action::Drop(c)]);
        }
        out.extend([Action::Tick, Action::Failover]);
        if self.faults.has(Fault::Jump) {
            out.extend((1..1u8 << s.clients.len().min(7)).map(Action::Jump));
        }
    }

    fn next_state(&self, s: &ZkLockState, a: Action) -> Option<ZkLockState> {
        self.effect(s, &a).map(|e| e.state).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        invariants(self.properties)
    }
}

/// Every state stored as it is: clients' names are in the server's node names and sessions, so
/// renaming clients would mean renaming those too.
impl Symmetry for ZkLockModel {}
