//! A lock inside the application process around a method that runs in a database
//! transaction — Java's `synchronized` on a Spring `@Transactional` method, the
//! overselling write-up's third way a local lock fails: the transaction begins before
//! the lock is taken and commits after it is released. Teaching only: the lock
//! excludes every section and still loses updates.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use locklab_models::registry::ScenarioId;
use locklab_models::sql::spec::{SqlCommand, SqlReply};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::super::session::Session;
use super::unexpected;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// `sql-mutex-in-tx`.
pub const MUTEX_IN_TX: &str = ScenarioId::SqlMutexInTx.name();

/// The application's lock (one per process: every handle of a run shares it) taken
/// inside a transaction on the handle's own session.
#[derive(Clone, Debug)]
pub struct InProcessTxLock {
    session: Arc<Session>,
    key: String,
    mutex: Arc<Mutex<()>>,
    commit_after: Duration,
}

impl InProcessTxLock {
    /// `mutex` taken after `BEGIN` on `session`; the `COMMIT` is sent `commit_after`
    /// the mutex is released (what the method's caller does after it returns: the
    /// transaction proxy's own work before its `COMMIT`).
    pub fn new(
        session: Arc<Session>,
        key: &str,
        mutex: Arc<Mutex<()>>,
        commit_after: Duration,
    ) -> Self {
        InProcessTxLock {
            session,
            key: key.into(),
            mutex,
            commit_after,
        }
    }

    /// The session whose transaction the work belongs in: it commits only after the
    /// release.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

struct Held {
    session: Arc<Session>,
    guard: StdMutex<Option<OwnedMutexGuard<()>>>,
    commit_after: Duration,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            // The method returns: its lock is free before its transaction ends.
            drop(self.guard.lock().unwrap_or_else(|p| p.into_inner()).take());
            tokio::time::sleep(self.commit_after).await;
            match self.session.exec(SqlCommand::Commit).await? {
                SqlReply::Ok => Ok(()),
                other => Err(unexpected(&SqlCommand::Commit, &other)),
            }
        })
    }
}

impl DistributedLock for InProcessTxLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: MUTEX_IN_TX,
            key: self.key.clone(),
            owner: format!("session {}", self.session.id()),
            reentrant: false,
            fenced: false,
            teaching_only: true,
        }
    }

    /// `BEGIN`, then waits for the application's lock as `synchronized` does: a
    /// waiter wakes the moment it is released.
    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let sent_at = Instant::now();
            self.session.exec(SqlCommand::Begin).await?;
            let guard = self.mutex.clone().lock_owned().await;
            let held = Arc::new(Held {
                session: self.session.clone(),
                guard: StdMutex::new(Some(guard)),
                commit_after: self.commit_after,
            });
            Ok(Attempt::Acquired(LockGuard::new(
                MUTEX_IN_TX,
                &self.key,
                None,
                held,
                lease,
                sent_at,
            )))
        })
    }
}
