//! The `mysql-*`, `pg-*` and `sql-*` rows of the catalog, and how each builds its
//! [`SqlLockModel`].

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::registry::ScenarioId;
use crate::registry::{Family, Fault, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::{Dialect, SqlLockModel};
use super::protocol::{Lock, Work};

/// A SQL row's typed configuration; the bounds and fault budgets come from [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqlLock {
    /// The server the row is written for.
    pub dialect: Dialect,
    /// How clients lock.
    pub lock: Lock,
    /// Where the work happens.
    pub work: Work,
    /// A fencing token (row id or `nextval`) checked by the resource.
    pub fencing: bool,
    /// Statements borrow from a pool of this many connections.
    pub pool: Option<u8>,
    /// The last client's code path takes no lock ([`SqlLockModel::bypass`]).
    pub bypass: bool,
}

impl SqlLock {
    /// `lock` on `dialect`, work outside the database, no fencing, no pool.
    pub const fn new(dialect: Dialect, lock: Lock) -> SqlLock {
        SqlLock {
            dialect,
            lock,
            work: Work::Outside,
            fencing: false,
            pool: None,
            bypass: false,
        }
    }

    /// The same, the last client's code path taking no lock.
    pub const fn bypassed(self) -> SqlLock {
        SqlLock {
            bypass: true,
            ..self
        }
    }

    /// The same, the work done in the locking transaction.
    pub const fn in_tx(self) -> SqlLock {
        SqlLock {
            work: Work::InTx,
            ..self
        }
    }

    /// The same, with a fencing token checked by the resource.
    pub const fn fenced(self) -> SqlLock {
        SqlLock {
            fencing: true,
            ..self
        }
    }

    /// The same, every statement through a pool of `n` connections.
    pub const fn pooled(self, n: u8) -> SqlLock {
        SqlLock {
            pool: Some(n),
            ..self
        }
    }
}

impl SqlLock {
    /// The model of `scenario` with `p`; time runs `tail` past the horizon (see
    /// [`SqlLockModel::tail`]).
    fn model(&self, scenario: &Scenario, p: &Params, tail: u64) -> SqlLockModel {
        SqlLockModel {
            lock: self.lock,
            work: self.work,
            fencing: self.fencing,
            pool: self.pool,
            bypass: self.bypass,
            dialect: self.dialect,
            clients: p.clients,
            ttl: p.ttl,
            faults: Budget::of(&p.faults),
            horizon: match tail == crate::kernel::repeat::FOR_EVER {
                true => crate::kernel::repeat::horizon(&Budget::of(&p.faults), 2 * p.ttl + 2),
                false => 2 * p.ttl + 2,
            },
            tail,
            repeat: tail == crate::kernel::repeat::FOR_EVER,
            properties: scenario.properties,
        }
    }
}

impl Build for SqlLock {
    fn build(&self, scenario: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(self.model(scenario, p, 0))
    }

    fn with_tail(
        &self,
        scenario: &Scenario,
        p: &Params,
        tail: u64,
    ) -> Option<Box<dyn progress::Judge>> {
        if self.pool.is_some() {
            // A blocked statement waits on the connection it was sent on; the model
            // picks the connection when the statement is granted, so a waiter could
            // be granted through a connection it never waited on.
            return Some(Box::new(progress::Undecided(
                "with a pool, the model picks a waiting statement's connection when it is \
                 granted, not when it is sent, so it cannot tell a waiter stuck on the \
                 wrong connection"
                    .into(),
            )));
        }
        Some(Box::new(self.model(scenario, p, tail)))
    }

    fn repeating(&self, scenario: &Scenario, p: &Params) -> Option<Box<dyn progress::Judge>> {
        let m = self.model(scenario, p, crate::kernel::repeat::FOR_EVER);
        m.can_repeat()
            .then(|| Box::new(m) as Box<dyn progress::Judge>)
    }
}

const MX: &[Property] = &[Property::MutualExclusion];
const MX_FR: &[Property] = &[Property::MutualExclusion, Property::NoForeignRelease];
const MX_LIVE: &[Property] = &[Property::MutualExclusion, Property::Liveness];
const MX_RES: &[Property] = &[Property::MutualExclusion, Property::ResourceSafety];
const RES: &[Property] = &[Property::ResourceSafety];
const RES_FR: &[Property] = &[Property::ResourceSafety, Property::NoForeignRelease];
const LIVE: &[Property] = &[Property::Liveness];

/// Every SQL scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Dialect::{MySql, Postgres};
    use Expected::{Holds, Violates};
    let one = |fault: Fault| Params::BASE.with_faults(&[(fault, 1)]);
    let sql = Family::Sql;
    const UNIQUE: Lock = Lock::UniqueKey {
        reaper: false,
        by_id: false,
    };
    const REAPED: Lock = Lock::UniqueKey {
        reaper: true,
        by_id: false,
    };
    const REAPED_BY_ID: Lock = Lock::UniqueKey {
        reaper: true,
        by_id: true,
    };
    vec![
        Scenario {
            id: ScenarioId::MysqlUniqueCrash.into(),
            family: sql,
            protocol: "INSERT INTO locks (name, owner) to lock (unique name); DELETE … WHERE name to release",
            faults: "holder crash",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "The unique key excludes well, but the committed row outlives a crashed holder: nothing deletes it and every waiter is stuck forever.",
            defaults: one(Fault::Crash),
            model: &const { SqlLock::new(MySql, UNIQUE) },
        },
        Scenario {
            id: ScenarioId::MysqlUniqueReaper.into(),
            family: sql,
            protocol: "unique-key INSERT; a reaper deletes rows older than the TTL; release DELETE … WHERE name",
            faults: "holder pause > TTL",
            properties: MX_FR,
            expected: Violates(MX_FR),
            lesson: "A reaper cures the crash but cannot tell a dead holder from a slow one: it deletes the slow holder's row, the next client inserts its own, and the slow holder's DELETE by name removes it.",
            defaults: one(Fault::Pause),
            model: &const { SqlLock::new(MySql, REAPED) },
        },
        Scenario {
            id: ScenarioId::MysqlUniqueReaperFenced.into(),
            family: sql,
            protocol: "unique-key INSERT + reaper; release DELETE … WHERE id = <its auto-increment id>, the id a fencing token",
            faults: "holder pause > TTL",
            properties: RES_FR,
            expected: Holds,
            lesson: "Releasing by the row's id deletes only one's own row, and the id only grows, so the resource can refuse the slow holder's stale writes.",
            defaults: one(Fault::Pause),
            model: &const { SqlLock::new(MySql, REAPED_BY_ID).fenced() },
        },
        Scenario {
            id: ScenarioId::MysqlUniqueReaperDies.into(),
            family: sql,
            protocol: "unique-key INSERT; a reaper job deletes rows older than the TTL; release DELETE … WHERE name",
            faults: "the reaper job dies; a holder crashes",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "The reaper is what frees a crashed holder's row, so the lock is only as live as the reaper: once the job dies (its host down, a deploy that dropped it) the next crash leaves a row nothing deletes, and every waiter is stuck as if there were no reaper at all. The job must be watched and restarted like the database.",
            defaults: Params::BASE.with_faults(&[(Fault::ReaperDies, 1), (Fault::Crash, 1)]),
            model: &const { SqlLock::new(MySql, REAPED) },
        },
        Scenario {
            id: ScenarioId::MysqlLeaseNoCas.into(),
            family: sql,
            protocol: "lease row: SELECT … WHERE last_lock_time < NOW() - ttl, then UPDATE locks SET owner, last_lock_time = NOW() WHERE name (no compare-and-set)",
            faults: "none",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "Checking the lease and taking it in two statements lets two clients both see it free (or expired) before either writes: both UPDATEs succeed and both hold. The expiry must be the UPDATE's own WHERE, a compare-and-set, as mysql-lease-dbtime-pause does.",
            defaults: Params::BASE,
            model: &const { SqlLock::new(MySql, Lock::Lease { db_time: true, cas: false }) },
        },
        Scenario {
            id: ScenarioId::MysqlLeaseClockSkew.into(),
            family: sql,
            protocol: "lease row: UPDATE locks SET owner, last_lock_time = ?now WHERE last_lock_time < ?now - ttl, now from the client",
            faults: "client clock skew > TTL",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "A lease compared against the client's clock is only as good as that clock: a client running ahead sees every lease expired.",
            defaults: one(Fault::Skew),
            model: &const { SqlLock::new(MySql, Lock::Lease { db_time: false, cas: true }) },
        },
        Scenario {
            id: ScenarioId::MysqlLeaseDbtimePause.into(),
            family: sql,
            protocol: "lease row UPDATE … WHERE last_lock_time < NOW() - ttl: the database's clock",
            faults: "holder pause > TTL",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "NOW() gives every client one clock, which fixes skew but not pauses: a holder stopped past its lease shares the section.",
            defaults: one(Fault::Pause),
            model: &const { SqlLock::new(MySql, Lock::Lease { db_time: true, cas: true }) },
        },
        Scenario {
            id: ScenarioId::MysqlLeaseDbtimeJump.into(),
            family: sql,
            protocol: "lease row UPDATE … WHERE last_lock_time < NOW() - ttl: the database's clock",
            faults: "the database server's clock jumps ahead > TTL while a client holds",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "NOW() takes the clients' clocks out of the lease but puts the server's in: when the database's clock steps ahead (NTP, a VM restored, date -s), every lease reads as expired at once and the next client takes the row while the holder still works.",
            defaults: one(Fault::Jump),
            model: &const { SqlLock::new(MySql, Lock::Lease { db_time: true, cas: true }) },
        },
        Scenario {
            id: ScenarioId::MysqlGetlockHung.into(),
            family: sql,
            protocol: "SELECT GET_LOCK('lock', 0); SELECT RELEASE_LOCK('lock')",
            faults: "the holder's worker hangs for good (a deadlock, a call that never returns); its connection stays open",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "A session lock's heartbeat is the connection itself: while the holder's worker hangs, its driver and TCP keep the session alive, so the lock is never freed and every waiter waits for ever — the mirror image of mysql-getlock-conn-kill, where the session ends under a holder that works on. Only a deadline on the work (or a server-side timeout that ends idle sessions) frees it.",
            defaults: one(Fault::Hang),
            model: &const { SqlLock::new(MySql, Lock::GetLock) },
        },
        Scenario {
            id: ScenarioId::MysqlGetlockConnKill.into(),
            family: sql,
            protocol: "SELECT GET_LOCK('lock', 0); SELECT RELEASE_LOCK('lock')",
            faults: "the holder's session is killed while it works",
            properties: MX,
            expected: Violates(MX),
            lesson: "A session lock lives exactly as long as the session: kill the connection (or lose it) and the lock is gone while the client, sending nothing, still believes it holds it.",
            defaults: one(Fault::Kill),
            model: &const { SqlLock::new(MySql, Lock::GetLock) },
        },
        Scenario {
            id: ScenarioId::SqlForUpdate.into(),
            family: sql,
            protocol: "BEGIN; SELECT … FOR UPDATE; the work in the same transaction; COMMIT",
            faults: "client crash, session killed",
            properties: MX_RES,
            expected: Holds,
            lesson: "When the work commits with the lock, losing the lock loses the work too: a killed session's writes roll back with its row lock.",
            defaults: Params::BASE.with_faults(&[(Fault::Crash, 1), (Fault::Kill, 1)]),
            model: &const { SqlLock::new(MySql, Lock::ForUpdate).in_tx() },
        },
        Scenario {
            id: ScenarioId::SqlForUpdateOutsideTx.into(),
            family: sql,
            protocol: "BEGIN; SELECT … FOR UPDATE; work outside the transaction; COMMIT",
            faults: "session killed",
            properties: MX,
            expected: Violates(MX),
            lesson: "Work outside the locking transaction does not roll back: a killed session frees the row lock while the holder works on.",
            defaults: one(Fault::Kill),
            model: &const { SqlLock::new(MySql, Lock::ForUpdate) },
        },
        Scenario {
            id: ScenarioId::SqlForUpdatePlainSelect.into(),
            family: sql,
            protocol: "BEGIN; SELECT … FOR UPDATE; read and write the counter; COMMIT — except one code path on the same stock, which reads it with a plain SELECT and writes it back in a transaction of its own",
            faults: "none",
            properties: MX_RES,
            expected: Violates(MX_RES),
            lesson: "FOR UPDATE excludes only the statements that ask for it: a plain SELECT is a consistent read, which waits for no row lock and returns the last committed value, so a second code path that reads the stock that way and writes it back overwrites a locked holder's update as soon as its row lock is free. Every path that changes the stock must lock it the same way (write-up 000: 'stock operations must be uniform').",
            defaults: Params::BASE,
            model: &const { SqlLock::new(MySql, Lock::ForUpdate).in_tx().bypassed() },
        },
        Scenario {
            id: ScenarioId::SqlMutexInTx.into(),
            family: sql,
            protocol: "@Transactional method with synchronized inside: BEGIN; take the application's lock; SELECT n, UPDATE n = n' in the transaction; release the lock as the method returns; COMMIT",
            faults: "none",
            properties: MX_RES,
            expected: Violates(RES),
            lesson: "The application's lock excludes every section, yet an update is lost: it is released before the transaction that holds the write commits, so the next client reads the old committed value and overwrites the first write once its row lock is free. The lock must wrap the transaction, not sit inside it.",
            defaults: Params::BASE,
            model: &const { SqlLock::new(MySql, Lock::LocalMutex { read_uncommitted: false }).in_tx() },
        },
        Scenario {
            id: ScenarioId::SqlMutexInTxReadUncommitted.into(),
            family: sql,
            protocol: "the same method at READ UNCOMMITTED (MySQL): the next client reads the holder's uncommitted write",
            faults: "a client's method throws after its lock is released: its transaction rolls back",
            properties: MX_RES,
            expected: Violates(RES),
            lesson: "Reading uncommitted data does close the window without a fault: the next client sees the holder's write and its own UPDATE waits for the commit. But a transaction that rolls back after its lock was released has already handed its write on: the next client commits a value built on an update that never happened.",
            defaults: one(Fault::Rollback),
            model: &const { SqlLock::new(MySql, Lock::LocalMutex { read_uncommitted: true }).in_tx() },
        },
        Scenario {
            id: ScenarioId::PgAdvisory.into(),
            family: sql,
            protocol: "SELECT pg_advisory_lock(1); SELECT pg_advisory_unlock(1)",
            faults: "pg_terminate_backend of the holder",
            properties: MX,
            expected: Violates(MX),
            lesson: "An advisory lock belongs to the backend: terminate it and the lock is free while the client works on.",
            defaults: one(Fault::Kill),
            model: &const { SqlLock::new(Postgres, Lock::Advisory) },
        },
        Scenario {
            id: ScenarioId::PgAdvisoryFenced.into(),
            family: sql,
            protocol: "pg_advisory_lock + SELECT nextval('fence') token checked by the resource",
            faults: "pg_terminate_backend of the holder",
            properties: RES,
            expected: Holds,
            lesson: "A sequence value taken under the lock only grows, so the resource refuses the terminated holder's stale writes.",
            defaults: one(Fault::Kill),
            model: &const { SqlLock::new(Postgres, Lock::Advisory).fenced() },
        },
        Scenario {
            id: ScenarioId::PgAdvisoryXact.into(),
            family: sql,
            protocol: "BEGIN; SELECT pg_advisory_xact_lock(1); the write in the same transaction; COMMIT",
            faults: "pg_terminate_backend of the holder",
            properties: MX_RES,
            expected: Holds,
            lesson: "A transaction-level advisory lock and the write end together: a terminated backend's write rolls back with its lock.",
            defaults: one(Fault::Kill),
            model: &const { SqlLock::new(Postgres, Lock::AdvisoryXact).in_tx() },
        },
        Scenario {
            id: ScenarioId::PgAdvisoryPool.into(),
            family: sql,
            protocol: "pg_advisory_lock / pg_advisory_unlock, each sent through a pool of two backends",
            faults: "none",
            properties: MX_LIVE,
            expected: Violates(MX_LIVE),
            lesson: "A session lock through a pool is owned by whichever backend ran the statement: another client re-enters it through that backend, and an unlock through the other backend leaves it orphaned.",
            defaults: Params::BASE,
            model: &const { SqlLock::new(Postgres, Lock::Advisory).pooled(2) },
        },
    ]
}
