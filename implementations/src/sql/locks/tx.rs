//! The transaction locks: `BEGIN` + `SELECT … FOR UPDATE NOWAIT` or
//! `pg_try_advisory_xact_lock`, released by `COMMIT`; the work goes through the lock's
//! session so it commits with the release or not at all.

use std::sync::Arc;
use std::time::Instant;

use locklab_models::registry::ScenarioId;
use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_models::sql::Dialect;

use super::super::session::Session;
use super::{advisory_key, unexpected};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// Which transaction lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxKind {
    /// `SELECT … FOR UPDATE NOWAIT` on the lock's row.
    ForUpdate,
    /// `pg_try_advisory_xact_lock(key)`.
    AdvisoryXact,
    /// Nothing: the transaction takes no lock at all — the code path beside a
    /// `FOR UPDATE` one that reads the same rows with a plain `SELECT`. Teaching only.
    Unlocked,
}

/// `sql-for-update`.
pub const FOR_UPDATE: &str = ScenarioId::SqlForUpdate.name();
/// `pg-advisory-xact`.
pub const ADVISORY_XACT: &str = ScenarioId::PgAdvisoryXact.name();
/// `sql-for-update-plain-select`: the path that takes no lock.
pub const PLAIN_SELECT: &str = ScenarioId::SqlForUpdatePlainSelect.name();

/// A lock held by an open transaction and released by its `COMMIT`.
#[derive(Clone, Debug)]
pub struct TxLock {
    session: Arc<Session>,
    key: String,
    kind: TxKind,
}

impl TxLock {
    /// `SELECT … FOR UPDATE` on the row `key` (created if missing).
    pub async fn for_update(session: Arc<Session>, key: &str) -> Result<Self, LockError> {
        session.ensure_row(key).await?;
        Ok(Self::for_update_on_row(session, key))
    }

    /// A transaction that takes no lock on `key`: `BEGIN`, then straight to the work,
    /// released by its `COMMIT` (teaching only: it excludes nobody).
    pub fn unlocked(session: Arc<Session>, key: &str) -> Self {
        TxLock {
            session,
            key: key.into(),
            kind: TxKind::Unlocked,
        }
    }

    /// `SELECT … FOR UPDATE` on a row someone already made ([`Session::ensure_row`]).
    pub fn for_update_on_row(session: Arc<Session>, key: &str) -> Self {
        TxLock {
            session,
            key: key.into(),
            kind: TxKind::ForUpdate,
        }
    }

    /// `pg_advisory_xact_lock` on `key` (PostgreSQL).
    pub fn advisory_xact(session: Arc<Session>, key: &str) -> Result<Self, LockError> {
        if session.dialect() != Dialect::Postgres {
            return Err(LockError::Unsupported {
                protocol: ADVISORY_XACT,
                what: "MySQL (advisory locks are PostgreSQL's)",
            });
        }
        Ok(TxLock {
            session,
            key: key.into(),
            kind: TxKind::AdvisoryXact,
        })
    }

    /// The session whose transaction holds the lock: statements sent here while the
    /// guard is held commit with the release, or roll back with a lost session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

struct TxHeld {
    session: Arc<Session>,
    key: String,
}

impl HeldLock for TxHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            // A COMMIT on a killed session fails: the transaction, and the work in it,
            // rolled back — the lock was not ours throughout.
            match self.session.exec(SqlCommand::Commit).await {
                Ok(SqlReply::Ok) => Ok(()),
                Ok(other) => Err(unexpected(&SqlCommand::Commit, &other)),
                Err(_) => Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                }),
            }
        })
    }
}

impl DistributedLock for TxLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: match self.kind {
                TxKind::ForUpdate => FOR_UPDATE,
                TxKind::AdvisoryXact => ADVISORY_XACT,
                TxKind::Unlocked => PLAIN_SELECT,
            },
            key: self.key.clone(),
            owner: format!("session {}", self.session.id()),
            reentrant: false,
            fenced: false,
            teaching_only: self.kind == TxKind::Unlocked,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let sent_at = Instant::now();
            self.session.exec(SqlCommand::Begin).await?;
            let cmd = match self.kind {
                TxKind::ForUpdate => SqlCommand::SelectForUpdate {
                    name: self.key.clone(),
                    nowait: true,
                },
                TxKind::AdvisoryXact => SqlCommand::TryAdvisoryLock {
                    key: advisory_key(&self.key),
                    xact: true,
                },
                TxKind::Unlocked => {
                    return Ok(Attempt::Acquired(self.granted(lease, sent_at)));
                }
            };
            let reply = self.session.exec(cmd.clone()).await;
            let granted = match &reply {
                Ok(SqlReply::Rows(1)) | Ok(SqlReply::Bool(true)) => true,
                Ok(SqlReply::LockNotAvailable) | Ok(SqlReply::Bool(false)) => false,
                _ => {
                    let _ = self.session.exec(SqlCommand::Rollback).await;
                    return match reply {
                        Err(e) => Err(e),
                        Ok(r) => Err(unexpected(&cmd, &r)),
                    };
                }
            };
            if !granted {
                self.session.exec(SqlCommand::Rollback).await?;
                return Ok(Attempt::busy());
            }
            Ok(Attempt::Acquired(self.granted(lease, sent_at)))
        })
    }
}

impl TxLock {
    /// The guard of this lock's open transaction, its `COMMIT` the release.
    fn granted(&self, lease: Lease, sent_at: Instant) -> LockGuard {
        let held = Arc::new(TxHeld {
            session: self.session.clone(),
            key: self.key.clone(),
        });
        LockGuard::new(self.info().protocol, &self.key, None, held, lease, sent_at)
    }
}
