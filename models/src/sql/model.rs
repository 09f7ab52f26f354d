//! The stateright model shared by every SQL lock row: clients running a [`Lock`]
//! program against one server ([`spec`](super::spec)), each on its own connection or
//! through a shared pool, with time, a reaper and the fault budget.
//!
//! The state, the actions and the properties read here, as stateright's example
//! protocols are written; a client's step through its lock is in `model/step.rs`, the
//! other actions' effects in `model/actions.rs`, the words in `narration.rs` and
//! `diagram.rs`, the server's semantics in `spec.rs`.

use stateright::Model;

use crate::check::Symmetry;
use crate::kernel::{
    client_faults, invariants, time, Budget, ClientFault, ClientPhase, LockChecks, Process, Stage,
};
use crate::registry::{Fault, Property};
use crate::resource::{Access, Resource};

use super::protocol::{Acquired, Lock, Work};
use super::spec::{apply, SqlCommand, SqlReply, SqlState, LOCK_NAME};

mod actions;
mod step;

/// Which server's dialect the row is written for (the statements that exist in only one
/// of them say so themselves; this names the kill fault and the server in stories).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MariaDB / MySQL.
    MySql,
    /// PostgreSQL.
    Postgres,
}

/// A row's configuration: the lock, where the work happens, the bounds and faults.
#[derive(Clone, Debug)]
pub struct SqlLockModel {
    /// How clients lock.
    pub lock: Lock,
    /// Where the critical section's work happens.
    pub work: Work,
    /// A fencing token checked by the resource (the row id, or `nextval`).
    pub fencing: bool,
    /// Connections in a pool every statement borrows from (`None`: one per client).
    pub pool: Option<u8>,
    /// The last client's code path takes no lock: in its own transaction it reads the
    /// counter with a plain `SELECT` and writes it back, where every other path
    /// `SELECT … FOR UPDATE`s first (a second code path on the same stock).
    pub bypass: bool,
    /// The server.
    pub dialect: Dialect,
    /// Clients (each locks once, unless `repeat`).
    pub clients: usize,
    /// Lease / reaper age in ticks.
    pub ttl: u64,
    /// Faults the checker may inject: client pauses and crashes (the server then
    /// closes the client's session), sessions killed by the server (`KILL
    /// CONNECTION`, `pg_terminate_backend`), client clocks jumping ahead by more than
    /// the TTL, the server's own clock jumping ahead by more than the TTL.
    pub faults: Budget,
    /// The clock stops here.
    pub horizon: u64,
    /// Past the horizon, time may run this many ticks further while a deadline is still
    /// ahead, and faults no longer strike: a progress check's way to let leases run out
    /// ([`crate::progress`]). 0 for safety checks.
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
    /// Acquire stage `n`.
    Acquire(u8),
    /// `nextval` for a fencing token.
    Fence,
    /// Inside the critical section, sub-step `n` (read, then write).
    Critical(u8),
    /// Sending the release.
    Release,
    /// An in-process lock released, its transaction — and the row lock its `UPDATE`
    /// took — still open: `COMMIT` next.
    Commit,
    /// Finished (or gave up after losing its connection).
    Done,
    /// Crashed for good.
    Crashed,
}

impl ClientPhase for Phase {
    fn stage(self) -> Stage {
        match self {
            Phase::Acquire(_) => Stage::Queued,
            Phase::Fence | Phase::Release | Phase::Commit => Stage::Holding,
            Phase::Critical(k) => Stage::Inside(k),
            Phase::Done => Stage::Done,
            Phase::Crashed => Stage::Crashed,
        }
    }

    /// Also past the first statement of a multi-statement acquire: a crash there
    /// leaves a row behind.
    fn started(self) -> bool {
        self.holding() || matches!(self, Phase::Acquire(k) if k > 0)
    }
}

/// A client process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    /// Program counter.
    pub phase: Phase,
    /// Stopped by a pause fault.
    pub process: Process,
    /// The session its lock (and transaction) lives on.
    pub session: u8,
    /// How far its clock runs ahead of the server's.
    pub skew: u64,
    /// Until when (server time) a timed lock is its own.
    pub lease_until: Option<u64>,
    /// Its fencing token (row id or `nextval`).
    pub token: u64,
    /// What it read in the critical section.
    pub read: u8,
    /// It gave up because its connection was gone.
    pub lost: bool,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlLockState {
    /// Real time: the clients' clocks run from it (plus their skew), leases are
    /// believed by it.
    pub now: u64,
    /// How far the server's clock runs ahead of real time: `NOW()`, a row's `created`
    /// and a lease's `last_lock_time` by the database's clock are `now + db_ahead`.
    pub db_ahead: u64,
    /// The server.
    pub db: SqlState,
    /// Client `c` at index `c`: its rows' `owner` is `owner(c)` (`c0`), and every
    /// [`Action`] that names a client names it by `c`.
    pub clients: Vec<Client>,
    /// The resource outside the database.
    pub resource: Resource,
    /// Transactions that committed a `counter` write.
    pub commits: u8,
    /// Faults left.
    pub budget: Budget,
    /// The client that deleted a lock row another client wrote, if any.
    pub foreign_release: Option<u8>,
    /// The reaper job died: no row is reaped again.
    pub reaper_dead: bool,
    /// Who holds the application's in-process lock ([`Lock::LocalMutex`]): every
    /// client is a thread of one process.
    pub mutex: Option<u8>,
    /// The clients whose acquire statement waits at the server for the lock, in the
    /// order their statements came ([`Lock::queues`]): the first is granted next.
    pub queue: Vec<u8>,
}

/// What can happen next.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A client's next step, its statement sent over session `via`.
    Step {
        /// Index into `SqlLockState::clients` of the client that steps.
        client: u8,
        /// The session (its own, or one borrowed from the pool).
        via: u8,
    },
    /// One tick passes.
    Tick,
    /// The reaper job deletes rows older than the TTL.
    Reap,
    /// Fault: the client stops (GC, stop-the-world).
    Pause(u8),
    /// The paused client runs again.
    Resume(u8),
    /// Fault: the client dies; the server closes its session.
    Crash(u8),
    /// Fault: the holder's worker hangs for good; its connection, and the session
    /// the lock belongs to, stay open.
    Hang(u8),
    /// Fault: the server kills this session.
    Kill(u8),
    /// Fault: the client's clock jumps ahead by more than the TTL.
    Skew(u8),
    /// Fault: the server's clock jumps ahead by more than the TTL (an NTP step, a VM
    /// restored from a snapshot, an operator's `date -s`).
    Jump,
    /// Fault: the reaper job dies (its cron host down, the job disabled by a deploy);
    /// nothing restarts it.
    ReaperDies,
    /// Fault: a client that released its in-process lock rolls its transaction back
    /// instead of committing it (the method throws after the synchronized block).
    Rollback(u8),
}

/// A step's next state, with the session, statement and reply it sent.
pub(super) type Effect = crate::kernel::Effect<SqlLockState, (u8, SqlCommand, SqlReply)>;

client_faults!(Action: Pause, Resume, Crash, Hang);

impl SqlLockState {
    /// The server's clock: what `NOW()` returns.
    pub fn db_now(&self) -> u64 {
        self.now + self.db_ahead
    }
}

/// A client's name, as its rows' `owner` column holds it.
pub fn owner(c: usize) -> String {
    format!("c{c}")
}

impl SqlLockModel {
    fn sessions(&self) -> usize {
        self.pool.map_or(self.clients, usize::from)
    }

    /// Whether a client's statements must use its own session: without a pool, or once
    /// a transaction pins the connection.
    fn pinned(&self) -> bool {
        self.pool.is_none() || self.lock.transactional()
    }

    /// Whether client `c` is the one whose code path takes no lock ([`Self::bypass`]).
    pub fn bypasses(&self, c: usize) -> bool {
        self.bypass && c + 1 == self.clients
    }

    fn two_step_work(&self) -> bool {
        self.fencing || self.work == Work::InTx
    }

    /// Whether client `c`'s queued statement may run now: it is first in the lock's
    /// queue, or the queue is empty and it has not joined it (a statement that finds
    /// the lock free and nobody waiting runs at once).
    fn in_turn(&self, s: &SqlLockState, c: usize, via: u8) -> bool {
        let free = self.lock_free(s, c, via);
        match s.queue.first() {
            Some(&first) => first as usize == c && free,
            None => free,
        }
    }

    /// Whether client `c`'s acquire statement, sent over session `via`, would run now,
    /// not wait.
    fn lock_free(&self, s: &SqlLockState, c: usize, via: u8) -> bool {
        let cl = &s.clients[c];
        let Phase::Acquire(k) = cl.phase else {
            return false;
        };
        let cmd = self.lock.acquire(k, &owner(c), s.now + cl.skew, self.ttl);
        apply(&s.db, via, &cmd, s.db_now()).is_some()
    }

    /// Time may pass unless a running holder's lease would run out: a holder that is
    /// not paused finishes within its TTL — the protocol's premise, which the faults
    /// break.
    fn may_tick(&self, s: &SqlLockState) -> bool {
        let kept = s.clients.iter().map(|c| {
            // A hung worker does not finish in time; nothing renews a lease row.
            let running = c.process.works() && c.phase.holding();
            running.then_some(c.lease_until).flatten()
        });
        let stop = time::stop(self.horizon, self.tail, || self.pending(s));
        // Where clients start over, time passes until the horizon, where the faults end
        // and finished clients ask again; an untimed lock reads no clock after that.
        let timed = self.lock.timed() || (self.repeat && s.now < self.horizon);
        timed && time::may_tick(s.now, stop, kept)
    }

    /// Whether a live reaper job deletes rows past their age.
    fn reaping(&self, s: &SqlLockState) -> bool {
        matches!(self.lock, Lock::UniqueKey { reaper: true, .. }) && !s.reaper_dead
    }

    /// Whether faults are over: past the horizon of a model with a tail.
    fn faults_over(&self, s: &SqlLockState) -> bool {
        time::faults_over(s.now, self.horizon, self.tail)
    }

    /// Whether some deadline is still ahead: a row a reaper or a lease taker will find
    /// expired later, a lease a client believes it holds.
    pub(super) fn pending(&self, s: &SqlLockState) -> bool {
        let ttl = self.ttl;
        // A row's times are the server's, but a lease on the clients' clocks is written
        // by their clocks (real time and a skew).
        let db_now = s.db_now();
        let row_now = match self.lock {
            Lock::Lease { db_time: false, .. } => s.now,
            _ => db_now,
        };
        self.lock.timed()
            && (s.db.rows.values().any(|r| {
                (r.created + ttl >= db_now && !s.reaper_dead)
                    || r.last_lock_time.is_some_and(|t| t + ttl >= row_now)
            }) || s
                .clients
                .iter()
                .any(|c| c.lease_until.is_some_and(|d| d > s.now)))
    }
}

impl LockChecks for SqlLockModel {
    /// Clients inside the critical section whose work can still take effect: work in
    /// a transaction whose session is gone will roll back, so it does not count.
    fn in_critical(&self, s: &SqlLockState) -> Vec<usize> {
        (0..s.clients.len())
            .filter(|&c| {
                let cl = &s.clients[c];
                cl.phase.critical()
                    && (self.work == Work::Outside
                        || s.db
                            .sessions
                            .get(cl.session as usize)
                            .is_some_and(|x| x.alive))
            })
            .collect()
    }

    /// A lock no one will ever free while a client waits for it: a row whose writer no
    /// longer holds it and that no live reaper deletes, a session lock held by a session
    /// no client holds it through (the orphan a pool leaves), or one whose holder's
    /// worker hangs while its connection, and so its session, stays open.
    fn orphan(&self, s: &SqlLockState) -> Option<String> {
        let waiting = s
            .clients
            .iter()
            .any(|c| matches!(c.phase, Phase::Acquire(_)));
        if !waiting {
            return None;
        }
        let holds_via = |x: u8| {
            s.clients
                .iter()
                .any(|c| c.session == x && c.phase.holding())
        };
        let unique = matches!(self.lock, Lock::UniqueKey { .. }) && !self.reaping(s);
        if let Some(r) = s.db.rows.get(LOCK_NAME).filter(|_| unique) {
            let writer = (0..s.clients.len()).find(|&c| owner(c) == r.owner);
            if writer.is_some_and(|c| !s.clients[c].phase.holding()) {
                return Some(format!("row '{LOCK_NAME}' written by {}", r.owner));
            }
        }
        let hung = s.clients.iter().position(|c| {
            c.process.hung
                && c.phase.holding()
                && (s.db.named.values().any(|(x, _)| *x == c.session)
                    || s.db.advisory.values().any(|a| a.session == c.session))
        });
        if let Some(c) = hung {
            return Some(format!(
                "the session lock of c{c}, whose worker hangs while its connection stays open"
            ));
        }
        let sessions = s.db.named.values().map(|(x, _)| *x);
        let advisory = s.db.advisory.values().map(|a| a.session);
        sessions
            .chain(advisory)
            .find(|x| !holds_via(*x))
            .map(|x| format!("the session lock held by session {x}"))
    }

    fn foreign_release(&self, s: &SqlLockState) -> Option<u8> {
        s.foreign_release
    }

    /// The resource, and the `counter` row only transactions that committed.
    fn resource_safe(&self, s: &SqlLockState) -> bool {
        s.resource.safe() && s.db.counter == s.commits
    }
}

impl Model for SqlLockModel {
    type State = SqlLockState;
    type Action = Action;

    fn init_states(&self) -> Vec<SqlLockState> {
        let mut db = SqlState::new(self.sessions());
        if matches!(self.lock, Lock::Lease { .. } | Lock::ForUpdate) {
            // The lease and FOR UPDATE protocols lock a row created once, up front.
            db.rows.insert(
                LOCK_NAME.to_string(),
                super::spec::LockRow {
                    id: 1,
                    owner: String::new(),
                    created: 0,
                    last_lock_time: None,
                },
            );
            db.next_id = 2;
        }
        let clients = (0..self.clients).map(|c| self.fresh(c)).collect();
        vec![SqlLockState {
            now: 0,
            db_ahead: 0,
            db,
            clients,
            resource: Resource::default(),
            commits: 0,
            budget: self.faults,
            foreign_release: None,
            reaper_dead: false,
            mutex: None,
            queue: Vec::new(),
        }]
    }

    fn actions(&self, s: &SqlLockState, out: &mut Vec<Action>) {
        let sessions = s.db.sessions.len() as u8;
        for c in 0..s.clients.len() as u8 {
            for via in 0..sessions {
                out.push(Action::Step { client: c, via });
            }
            out.extend(Action::client_faults(c));
            out.push(Action::Skew(c));
            out.push(Action::Rollback(c));
        }
        for x in 0..sessions {
            out.push(Action::Kill(x));
        }
        out.push(Action::Tick);
        out.push(Action::Reap);
        out.push(Action::ReaperDies);
        out.push(Action::Jump);
    }

    fn next_state(&self, s: &SqlLockState, a: Action) -> Option<SqlLockState> {
        self.effect(s, &a).map(|e| e.state).filter(|n| n != s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        invariants(self.properties)
    }
}

/// Every state stored as it is: clients' names are in the server's rows and sessions, so
/// renaming clients would mean renaming those too.
impl Symmetry for SqlLockModel {}
