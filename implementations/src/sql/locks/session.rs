//! The session locks: `GET_LOCK` and `pg_try_advisory_lock` (optionally fenced by
//! `nextval`), owned by the session, so gone the instant the session is.

use std::sync::Arc;
use std::time::Instant;

use locklab_models::registry::ScenarioId;
use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_models::sql::Dialect;

use super::super::session::Session;
use super::{advisory_key, release_with, unexpected};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// Which session lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// MySQL `GET_LOCK(name, 0)` / `RELEASE_LOCK(name)`.
    GetLock,
    /// PostgreSQL `pg_try_advisory_lock(key)` / `pg_advisory_unlock(key)`.
    Advisory,
}

/// `mysql-getlock-conn-kill`.
pub const GET_LOCK: &str = ScenarioId::MysqlGetlockConnKill.name();
/// `pg-advisory`.
pub const ADVISORY: &str = ScenarioId::PgAdvisory.name();
/// `pg-advisory-fenced`.
pub const ADVISORY_FENCED: &str = ScenarioId::PgAdvisoryFenced.name();

/// A lock owned by the session: freed by the server the instant the session ends.
#[derive(Clone, Debug)]
pub struct SessionLock {
    session: Arc<Session>,
    key: String,
    kind: SessionKind,
    fenced: bool,
}

impl SessionLock {
    /// The dialect's session lock on `key`: `GET_LOCK` on MySQL, an advisory lock on
    /// PostgreSQL.
    pub fn new(session: Arc<Session>, key: &str) -> Self {
        let kind = match session.dialect() {
            Dialect::MySql => SessionKind::GetLock,
            Dialect::Postgres => SessionKind::Advisory,
        };
        SessionLock {
            session,
            key: key.into(),
            kind,
            fenced: false,
        }
    }

    /// Takes `nextval('fence')` after each grant as the fencing token (PostgreSQL).
    pub fn fenced(self) -> Result<Self, LockError> {
        if self.kind != SessionKind::Advisory {
            return Err(LockError::Unsupported {
                protocol: GET_LOCK,
                what: "a nextval fencing token",
            });
        }
        Ok(SessionLock {
            fenced: true,
            ..self
        })
    }
}

struct SessionHeld {
    session: Arc<Session>,
    key: String,
    kind: SessionKind,
}

impl HeldLock for SessionHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        let (cmd, ok): (SqlCommand, fn(&SqlReply) -> bool) = match self.kind {
            SessionKind::GetLock => (
                SqlCommand::ReleaseLock {
                    name: self.key.clone(),
                },
                |r| *r == SqlReply::Int(1),
            ),
            SessionKind::Advisory => (
                SqlCommand::AdvisoryUnlock {
                    key: advisory_key(&self.key),
                },
                |r| *r == SqlReply::Bool(true),
            ),
        };
        Box::pin(release_with(&self.session, &self.key, cmd, ok))
    }
}

impl DistributedLock for SessionLock {
    fn info(&self) -> LockInfo {
        let protocol = match (self.kind, self.fenced) {
            (SessionKind::GetLock, _) => GET_LOCK,
            (SessionKind::Advisory, false) => ADVISORY,
            (SessionKind::Advisory, true) => ADVISORY_FENCED,
        };
        LockInfo {
            protocol,
            key: self.key.clone(),
            owner: format!("session {}", self.session.id()),
            // Both servers count a session's holds: the same handle re-enters.
            reentrant: true,
            fenced: self.fenced,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let sent_at = Instant::now();
            let cmd = match self.kind {
                SessionKind::GetLock => SqlCommand::GetLock {
                    name: self.key.clone(),
                },
                SessionKind::Advisory => SqlCommand::TryAdvisoryLock {
                    key: advisory_key(&self.key),
                    xact: false,
                },
            };
            match self.session.exec(cmd.clone()).await? {
                SqlReply::Int(1) | SqlReply::Bool(true) => {}
                SqlReply::Int(0) | SqlReply::Bool(false) => {
                    return Ok(Attempt::busy())
                }
                other => return Err(unexpected(&cmd, &other)),
            }
            let held = Arc::new(SessionHeld {
                session: self.session.clone(),
                key: self.key.clone(),
                kind: self.kind,
            });
            let token = if self.fenced {
                match self.session.exec(SqlCommand::NextVal).await {
                    Ok(SqlReply::Int(t)) => Some(u64::try_from(t).unwrap_or(0)),
                    other => {
                        // No token, no entry: give the lock back before failing.
                        let _ = held.release().await;
                        return match other {
                            Err(e) => Err(e),
                            Ok(r) => Err(unexpected(&SqlCommand::NextVal, &r)),
                        };
                    }
                }
            } else {
                None
            };
            let protocol = self.info().protocol;
            Ok(Attempt::Acquired(LockGuard::new(
                protocol, &self.key, token, held, lease, sent_at,
            )))
        })
    }
}
