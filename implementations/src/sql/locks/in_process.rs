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
/// `sql-mutex-in-tx-read-uncommitted`.
pub const MUTEX_IN_TX_READ_UNCOMMITTED: &str = ScenarioId::SqlMutexInTxReadUncommitted.name();

/// The application's lock (one per process: every handle of a run shares it) taken
/// inside a transaction on the handle's own session.
#[derive(Clone, Debug)]
pub struct InProcessTxLock {
    session: Arc<Session>,
    key: String,
    mutex: Arc<Mutex<()>>,
    commit_after: Duration,
    read_uncommitted: bool,
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
            read_uncommitted: false,
        }
    }

    /// The same, its transactions at `READ UNCOMMITTED` (MySQL: they read each other's
    /// uncommitted writes; PostgreSQL runs the level as `READ COMMITTED`).
    pub fn read_uncommitted(self) -> Self {
        InProcessTxLock {
            read_uncommitted: true,
            ..self
        }
    }

    fn protocol(&self) -> &'static str {
        match self.read_uncommitted {
            true => MUTEX_IN_TX_READ_UNCOMMITTED,
            false => MUTEX_IN_TX,
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
    key: String,
    guard: StdMutex<Option<OwnedMutexGuard<()>>>,
    commit_after: Duration,
}

impl Held {
    /// The method returns: its lock is free before its transaction ends with `end`.
    async fn end(&self, end: SqlCommand) -> Result<(), LockError> {
        drop(self.guard.lock().unwrap_or_else(|p| p.into_inner()).take());
        tokio::time::sleep(self.commit_after).await;
        match self.session.exec(end.clone()).await? {
            SqlReply::Ok => Ok(()),
            other => Err(unexpected(&end, &other)),
        }
    }
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.end(SqlCommand::Commit))
    }

    /// The method threw after its lock was released: the transaction rolls back.
    fn release_rolling_back(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            self.end(SqlCommand::Rollback).await?;
            Err(LockError::RolledBack {
                key: self.key.clone(),
            })
        })
    }
}

impl DistributedLock for InProcessTxLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: self.protocol(),
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
            let begin = if self.read_uncommitted {
                SqlCommand::BeginReadUncommitted
            } else {
                SqlCommand::Begin
            };
            self.session.exec(begin).await?;
            let guard = self.mutex.clone().lock_owned().await;
            let held = Arc::new(Held {
                session: self.session.clone(),
                key: self.key.clone(),
                guard: StdMutex::new(Some(guard)),
                commit_after: self.commit_after,
            });
            Ok(Attempt::Acquired(LockGuard::new(
                self.protocol(),
                &self.key,
                None,
                held,
                lease,
                sent_at,
            )))
        })
    }
}
