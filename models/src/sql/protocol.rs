//! The SQL lock protocols as statement programs: what a client sends at each acquire and
//! release stage, and what the reply means. The work inside the critical section is the
//! model's (it depends on where the work happens, [`Work`]).

use super::spec::{SqlCommand, SqlReply, ADVISORY_KEY, LOCK_NAME};

/// How a client locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lock {
    /// `INSERT` a row with a unique name; `DELETE` it to release.
    UniqueKey {
        /// A reaper deletes rows older than the TTL (so a crashed holder's row goes).
        reaper: bool,
        /// Release by the row's id (kept from the `INSERT`) instead of by its name.
        by_id: bool,
    },
    /// A lease row: `UPDATE … WHERE last_lock_time < T - ttl`.
    Lease {
        /// `T` is the database's `NOW()`, not the client's clock.
        db_time: bool,
        /// The expiry is checked in the `UPDATE` itself (compare-and-set); otherwise a
        /// `SELECT` checks it and an unconditional `UPDATE` takes the row.
        cas: bool,
    },
    /// MySQL `GET_LOCK` / `RELEASE_LOCK`: a lock owned by the session.
    GetLock,
    /// `BEGIN; SELECT … FOR UPDATE`, released by `COMMIT`.
    ForUpdate,
    /// `pg_advisory_lock` / `pg_advisory_unlock`: a session lock with a hold count.
    Advisory,
    /// `BEGIN; pg_advisory_xact_lock`, released by `COMMIT`.
    AdvisoryXact,
    /// A lock inside the application process — Java's `synchronized` or a
    /// `ReentrantLock` — around a method that runs in a transaction (Spring's
    /// `@Transactional`): `BEGIN`, then the lock; the lock released as the method
    /// returns, and only then the `COMMIT`.
    LocalMutex {
        /// The transaction runs at `READ UNCOMMITTED`.
        read_uncommitted: bool,
    },
}

/// Where the critical section's work happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// On a resource outside the database (a file, another service).
    Outside,
    /// On the `counter` row, in the locking transaction: it commits with the release or
    /// not at all.
    InTx,
}

/// What an acquire stage's reply means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Go on to the next stage.
    Next,
    /// Someone else holds it: start over.
    Busy,
    /// The lock is ours.
    Got,
    /// The connection is gone: give up.
    Lost,
}

impl Lock {
    /// Whether the lock lapses with time (so the model's clock matters).
    pub fn timed(self) -> bool {
        matches!(
            self,
            Lock::UniqueKey { reaper: true, .. } | Lock::Lease { .. }
        )
    }

    /// Whether acquire stage `k`'s statement waits at the server for the lock and is
    /// granted in its turn: `SELECT … FOR UPDATE` (InnoDB's and PostgreSQL's row lock
    /// waits), `pg_advisory_lock` and `pg_advisory_xact_lock` (PostgreSQL's lock
    /// queue). Both servers queue a lock's waiters and grant them in the order they
    /// came (MariaDB's InnoDB first come, first served); a new request that finds
    /// waiters queues behind them. `GET_LOCK(?, 0)` and the row protocols do not wait:
    /// their clients retry.
    pub fn queues(self, k: u8) -> bool {
        matches!(
            (self, k),
            (Lock::ForUpdate | Lock::AdvisoryXact, 1) | (Lock::Advisory, 0)
        )
    }

    /// Whether any stage's statement waits in the server's queue ([`Lock::queues`]).
    pub fn queued(self) -> bool {
        (0..2).any(|k| self.queues(k))
    }

    /// Whether the release ends a transaction (`COMMIT`).
    pub fn transactional(self) -> bool {
        matches!(
            self,
            Lock::ForUpdate | Lock::AdvisoryXact | Lock::LocalMutex { .. }
        )
    }

    /// Whether the lock lives in the application process, not in the database: its
    /// acquire stage 1 and its release send no statement.
    pub fn in_process(self) -> bool {
        matches!(self, Lock::LocalMutex { .. })
    }

    /// The statement of acquire stage `k`; `clock` is the client's own clock. (An
    /// [`in_process`](Lock::in_process) lock's stage 1 is the application's lock, which
    /// sends nothing: the model takes it itself.)
    pub fn acquire(self, k: u8, owner: &str, clock: u64, ttl: u64) -> SqlCommand {
        let name = LOCK_NAME.to_string();
        match (self, k) {
            (
                Lock::LocalMutex {
                    read_uncommitted: true,
                },
                _,
            ) => SqlCommand::BeginReadUncommitted,
            (Lock::LocalMutex { .. }, _) => SqlCommand::Begin,
            (Lock::UniqueKey { .. }, _) => SqlCommand::Insert {
                name,
                owner: owner.into(),
            },
            (Lock::Lease { db_time, cas: true }, _) => SqlCommand::LeaseAcquire {
                name,
                owner: owner.into(),
                now: (!db_time).then_some(clock),
                ttl,
            },
            (
                Lock::Lease {
                    db_time,
                    cas: false,
                },
                0,
            ) => SqlCommand::LeaseCheck {
                name,
                now: (!db_time).then_some(clock),
                ttl,
            },
            (
                Lock::Lease {
                    db_time,
                    cas: false,
                },
                _,
            ) => SqlCommand::LeaseTake {
                name,
                owner: owner.into(),
                now: (!db_time).then_some(clock),
            },
            (Lock::GetLock, _) => SqlCommand::GetLock { name },
            (Lock::ForUpdate | Lock::AdvisoryXact, 0) => SqlCommand::Begin,
            (Lock::ForUpdate, _) => SqlCommand::SelectForUpdate {
                name,
                nowait: false,
            },
            (Lock::AdvisoryXact, _) => SqlCommand::AdvisoryXactLock { key: ADVISORY_KEY },
            (Lock::Advisory, _) => SqlCommand::AdvisoryLock { key: ADVISORY_KEY },
        }
    }

    /// What the reply to acquire stage `k` means.
    pub fn acquired(self, k: u8, reply: &SqlReply) -> Acquired {
        match (self, reply) {
            (_, SqlReply::ConnectionLost) => Acquired::Lost,
            (Lock::ForUpdate | Lock::AdvisoryXact | Lock::LocalMutex { .. }, _) if k == 0 => {
                Acquired::Next
            }
            (Lock::Lease { cas: false, .. }, SqlReply::Rows(1)) if k == 0 => Acquired::Next,
            (Lock::UniqueKey { .. }, SqlReply::Inserted(_))
            | (Lock::Lease { .. }, SqlReply::Rows(1))
            | (Lock::GetLock, SqlReply::Int(1))
            | (
                Lock::ForUpdate | Lock::Advisory | Lock::AdvisoryXact | Lock::LocalMutex { .. },
                _,
            ) => Acquired::Got,
            _ => Acquired::Busy,
        }
    }

    /// The release statement; `id` is the row id the `INSERT` returned.
    pub fn release(self, owner: &str, id: u64) -> SqlCommand {
        let name = LOCK_NAME.to_string();
        match self {
            Lock::UniqueKey { by_id: true, .. } => SqlCommand::DeleteById { id },
            Lock::UniqueKey { .. } => SqlCommand::DeleteByName { name },
            Lock::Lease { .. } => SqlCommand::LeaseRelease {
                name,
                owner: owner.into(),
            },
            Lock::GetLock => SqlCommand::ReleaseLock { name },
            Lock::ForUpdate | Lock::AdvisoryXact | Lock::LocalMutex { .. } => SqlCommand::Commit,
            Lock::Advisory => SqlCommand::AdvisoryUnlock { key: ADVISORY_KEY },
        }
    }
}
