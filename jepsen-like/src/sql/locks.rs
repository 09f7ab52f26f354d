//! Which client lock a SQL scenario uses, and how one client builds it from its
//! session.

use locklab_implementations::sql::{
    InProcessTxLock, LeaseLock, SessionLock, TxLock, UniqueKeyLock,
};
use locklab_implementations::{DistributedLock, Lease};

use super::client::SqlClient;
use crate::RunError;

/// A SQL lock of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlLock {
    /// `GET_LOCK` (MariaDB) or `pg_advisory_lock` (PostgreSQL): the server's session
    /// lock.
    Session,
    /// `INSERT` a unique row, `DELETE` it by name.
    UniqueByName,
    /// The same while a reaper deletes old rows: released by name, or by id with the id
    /// as fencing token.
    UniqueReaped {
        /// Release by id, the id a fencing token.
        by_id: bool,
    },
    /// The session lock with a `nextval('fence')` token (PostgreSQL).
    SessionFenced,
    /// A lease row with the client's clock; client `skewed`'s runs `ahead_ms` ahead.
    LeaseClientTime {
        /// The client with the fast clock.
        skewed: u32,
        /// How far ahead (ms).
        ahead_ms: u64,
    },
    /// A lease row with the database's clock.
    LeaseDbTime,
    /// The same row checked by a `SELECT` and taken by an unconditional `UPDATE`.
    LeaseNoCas,
    /// `BEGIN; SELECT … FOR UPDATE`, the work outside the transaction.
    ForUpdate,
    /// `BEGIN; SELECT … FOR UPDATE`, the work in the same transaction.
    ForUpdateInTx,
    /// The same, but client `bypasser`'s code path takes no lock: `BEGIN`, a plain
    /// `SELECT` of the counter, its `UPDATE`, `COMMIT`.
    ForUpdateInTxBypassed {
        /// The client that takes no lock.
        bypasser: u32,
    },
    /// `BEGIN; SELECT pg_try_advisory_xact_lock`, the write in the same transaction
    /// (PostgreSQL).
    AdvisoryXact,
    /// `BEGIN`, then the application's in-process lock; the work in the transaction;
    /// the lock released, and the `COMMIT` sent this many ms later.
    MutexInTx {
        /// Between the release of the lock and the `COMMIT` (ms).
        commit_after_ms: u64,
        /// The transactions run at `READ UNCOMMITTED`.
        read_uncommitted: bool,
    },
}

impl SqlLock {
    /// The lease it asks for: the session and row locks have no expiry (a TTL would
    /// make the guard believe the lock lapses when it does not).
    pub fn lease(self, ttl: std::time::Duration) -> Lease {
        match self {
            SqlLock::LeaseDbTime
            | SqlLock::LeaseNoCas
            | SqlLock::LeaseClientTime { .. }
            | SqlLock::UniqueReaped { .. } => Lease::Fixed(ttl),
            _ => Lease::Unbounded,
        }
    }

    /// Whether the work is done in the locking transaction, on the database's own
    /// `counter` row: it commits with the release or rolls back with the session.
    pub fn work_in_tx(self) -> bool {
        matches!(
            self,
            SqlLock::ForUpdateInTx
                | SqlLock::ForUpdateInTxBypassed { .. }
                | SqlLock::AdvisoryXact
                | SqlLock::MutexInTx { .. }
        )
    }

    /// Whether the lock lives in the holder's session (a session lock, a row or
    /// advisory lock of its transaction), so killing that session frees it and the
    /// operator can find the session to kill.
    pub fn held_by_session(self) -> bool {
        matches!(
            self,
            SqlLock::Session
                | SqlLock::SessionFenced
                | SqlLock::ForUpdate
                | SqlLock::ForUpdateInTx
                | SqlLock::ForUpdateInTxBypassed { .. }
                | SqlLock::AdvisoryXact
        )
    }

    /// Whether the lock reads a clock (a lease, a reaper's age), so a clock jump can
    /// change what it grants.
    pub fn timed(self) -> bool {
        matches!(self.lease(std::time::Duration::ZERO), Lease::Fixed(_))
    }

    /// Whether the lock takes a row made once, up front (a `FOR UPDATE` or lease row).
    pub fn needs_row(self) -> bool {
        matches!(
            self,
            SqlLock::ForUpdate
                | SqlLock::ForUpdateInTx
                | SqlLock::ForUpdateInTxBypassed { .. }
                | SqlLock::LeaseDbTime
                | SqlLock::LeaseNoCas
                | SqlLock::LeaseClientTime { .. }
        )
    }
}

/// Client `lock` on `key` over the client's session.
pub fn build(
    lock: SqlLock,
    index: u32,
    client: &SqlClient,
    key: &str,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let session = client.session.clone();
    Ok(match lock {
        SqlLock::Session => Box::new(SessionLock::new(session, key)),
        SqlLock::UniqueByName | SqlLock::UniqueReaped { by_id: false } => {
            Box::new(UniqueKeyLock::new(session, key))
        }
        SqlLock::UniqueReaped { by_id: true } => Box::new(UniqueKeyLock::by_id(session, key)),
        SqlLock::SessionFenced => Box::new(
            SessionLock::new(session, key)
                .fenced()
                .map_err(|e| RunError::BadOption(e.to_string()))?,
        ),
        SqlLock::LeaseClientTime { skewed, ahead_ms } => {
            let lock = LeaseLock::on_row(session, key, false);
            let ahead = if index == skewed { ahead_ms } else { 0 };
            Box::new(lock.with_clock_ahead(std::time::Duration::from_millis(ahead)))
        }
        // The lock's row was made when the client connected (`build` cannot wait).
        SqlLock::LeaseDbTime => Box::new(LeaseLock::on_row(session, key, true)),
        SqlLock::LeaseNoCas => Box::new(LeaseLock::on_row(session, key, true).check_then_set()),
        SqlLock::ForUpdate | SqlLock::ForUpdateInTx => {
            Box::new(TxLock::for_update_on_row(session, key))
        }
        SqlLock::ForUpdateInTxBypassed { bypasser } if index == bypasser => {
            Box::new(TxLock::unlocked(session, key))
        }
        SqlLock::ForUpdateInTxBypassed { .. } => Box::new(TxLock::for_update_on_row(session, key)),
        SqlLock::AdvisoryXact => Box::new(
            TxLock::advisory_xact(session, key).map_err(|e| RunError::BadOption(e.to_string()))?,
        ),
        SqlLock::MutexInTx {
            commit_after_ms,
            read_uncommitted,
        } => {
            let lock = InProcessTxLock::new(
                session,
                key,
                client.app_lock.clone(),
                std::time::Duration::from_millis(commit_after_ms),
            );
            match read_uncommitted {
                true => Box::new(lock.read_uncommitted()),
                false => Box::new(lock),
            }
        }
    })
}
