//! The SQL locks behind [`DistributedLock`](crate::lock::DistributedLock), one type
//! per kind of lock, each handle on a [`Session`] of its own (one handle = one owner = one session):
//!
//! - [`UniqueKeyLock`]: `INSERT` a row with a unique name, `DELETE` it to release — by
//!   name (`mysql-unique-crash`, teaching only: a crashed holder's row stays forever) or
//!   by its auto-increment id, the id a fencing token (`mysql-unique-reaper-fenced`).
//!   [`reap`] is the reaper job the write-ups pair with it.
//! - [`LeaseLock`]: a lease row taken by `UPDATE … WHERE last_lock_time < T - ttl`, `T`
//!   the client's clock (`mysql-lease-clock-skew`, teaching only) or the database's.
//! - [`SessionLock`]: `GET_LOCK` (`mysql-getlock-conn-kill`) or `pg_try_advisory_lock`
//!   (`pg-advisory`, optionally fenced by `nextval`): owned by the session, so gone
//!   the instant the session is.
//! - [`TxLock`]: `BEGIN` + `SELECT … FOR UPDATE NOWAIT` (`sql-for-update`) or
//!   `pg_try_advisory_xact_lock` (`pg-advisory-xact`), released by `COMMIT`; do the
//!   work through [`TxLock::session`] so it commits with the release or not at all.
//! - [`InProcessTxLock`]: a lock of the application process taken inside a
//!   transaction and released before its `COMMIT` (`sql-mutex-in-tx`, teaching only).
//!
//! The waiting statements (`FOR UPDATE`, `pg_advisory_lock`) are sent as their
//! non-waiting twins so one attempt never blocks; the acquire loop does the waiting.

use std::sync::Arc;

use locklab_models::sql::spec::{SqlCommand, SqlReply};

use super::session::Session;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::HeldLock;

fn fresh_owner() -> String {
    format!("{}-{:016x}", std::process::id(), rand::random::<u64>())
}

/// A stable 64-bit advisory key for a lock name (FNV-1a).
pub fn advisory_key(name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

fn unexpected(cmd: &SqlCommand, reply: &SqlReply) -> LockError {
    LockError::UnexpectedReply {
        command: locklab_models::sql::spec::statement_text(cmd),
        reply: locklab_models::sql::spec::reply_text(reply),
    }
}

/// Sends `cmd` and expects one of the answers `ok` accepts; otherwise `NotHeld` for
/// the lock `key` (a release the server says found nothing of ours).
async fn release_with(
    session: &Session,
    key: &str,
    cmd: SqlCommand,
    ok: fn(&SqlReply) -> bool,
) -> Result<(), LockError> {
    let reply = session.exec(cmd).await?;
    if ok(&reply) {
        Ok(())
    } else {
        Err(LockError::NotHeld {
            key: key.into(),
            reason: None,
        })
    }
}

/// A held row (unique-key or lease), released by the statement that names it ours.
pub(super) struct RowHeld {
    pub(super) session: Arc<Session>,
    pub(super) key: String,
    pub(super) release: SqlCommand,
}

impl HeldLock for RowHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(release_with(
            &self.session,
            &self.key,
            self.release.clone(),
            |r| *r == SqlReply::Rows(1),
        ))
    }
}

mod in_process;
mod lease;
mod session;
mod tx;
mod unique;

pub use in_process::{InProcessTxLock, MUTEX_IN_TX, MUTEX_IN_TX_READ_UNCOMMITTED};
pub use lease::{LeaseLock, LEASE_CLIENT_TIME, LEASE_DB_TIME};
pub use session::{SessionKind, SessionLock, ADVISORY, ADVISORY_FENCED, GET_LOCK};
pub use tx::{TxKind, TxLock, ADVISORY_XACT, FOR_UPDATE};
pub use unique::{reap, UniqueKeyLock, UNIQUE_BY_ID, UNIQUE_BY_NAME};
