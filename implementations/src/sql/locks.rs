//! The SQL locks behind [`DistributedLock`], one type per kind of lock, each handle on
//! a [`Session`] of its own (one handle = one owner = one session):
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
//!
//! The waiting statements (`FOR UPDATE`, `pg_advisory_lock`) are sent as their
//! non-waiting twins so one attempt never blocks; the acquire loop does the waiting.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_models::sql::Dialect;

use super::session::Session;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

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

/// The reaper job: `DELETE FROM locks WHERE created < NOW() - ttl`; the rows deleted.
pub async fn reap(session: &Session, ttl: std::time::Duration) -> Result<u64, LockError> {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    match session.exec(SqlCommand::Reap { ttl: ms }).await? {
        SqlReply::Rows(n) => Ok(n),
        other => Err(unexpected(&SqlCommand::Reap { ttl: ms }, &other)),
    }
}

/// A held unique-key row.
struct RowHeld {
    session: Arc<Session>,
    key: String,
    release: SqlCommand,
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

/// `INSERT` a unique row to lock, `DELETE` it to release.
#[derive(Clone, Debug)]
pub struct UniqueKeyLock {
    session: Arc<Session>,
    key: String,
    owner: String,
    by_id: bool,
}

/// `mysql-unique-crash`: release by name.
pub const UNIQUE_BY_NAME: &str = ScenarioId::MysqlUniqueCrash.name();
/// `mysql-unique-reaper-fenced`: release by id, the id a fencing token.
pub const UNIQUE_BY_ID: &str = ScenarioId::MysqlUniqueReaperFenced.name();

impl UniqueKeyLock {
    /// Releases by name (`DELETE … WHERE name = ?`): deletes whatever row has the name,
    /// the next holder's too once a reaper took ours. Teaching only.
    pub fn new(session: Arc<Session>, key: &str) -> Self {
        UniqueKeyLock {
            session,
            key: key.into(),
            owner: fresh_owner(),
            by_id: false,
        }
    }

    /// Releases by the row's id (`DELETE … WHERE id = ?`) and hands the id out as the
    /// fencing token: it only grows, so a resource can refuse a reaped holder.
    pub fn by_id(session: Arc<Session>, key: &str) -> Self {
        UniqueKeyLock {
            by_id: true,
            ..Self::new(session, key)
        }
    }
}

impl DistributedLock for UniqueKeyLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: if self.by_id {
                UNIQUE_BY_ID
            } else {
                UNIQUE_BY_NAME
            },
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: self.by_id,
            teaching_only: !self.by_id,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let sent_at = Instant::now();
            let cmd = SqlCommand::Insert {
                name: self.key.clone(),
                owner: self.owner.clone(),
            };
            let id = match self.session.exec(cmd.clone()).await? {
                SqlReply::Inserted(id) => id,
                SqlReply::DuplicateKey => {
                    return Ok(Attempt::Busy {
                        retry_after: None,
                        reason: None,
                    })
                }
                other => return Err(unexpected(&cmd, &other)),
            };
            let release = if self.by_id {
                SqlCommand::DeleteById { id }
            } else {
                SqlCommand::DeleteByName {
                    name: self.key.clone(),
                }
            };
            let held = Arc::new(RowHeld {
                session: self.session.clone(),
                key: self.key.clone(),
                release,
            });
            let info = self.info();
            let token = self.by_id.then_some(id);
            Ok(Attempt::Acquired(LockGuard::new(
                info.protocol,
                &self.key,
                token,
                held,
                lease,
                sent_at,
            )))
        })
    }
}

/// A lease row: `UPDATE locks SET owner, last_lock_time = T WHERE name AND
/// last_lock_time < T - ttl`, released by `UPDATE … WHERE owner = ?`.
#[derive(Clone, Debug)]
pub struct LeaseLock {
    session: Arc<Session>,
    key: String,
    owner: String,
    db_time: bool,
    /// How far this client's clock runs ahead (the skew fault, without faking the
    /// whole process's clock).
    ahead: std::time::Duration,
}

/// `mysql-lease-clock-skew`: `T` from the client's clock.
pub const LEASE_CLIENT_TIME: &str = ScenarioId::MysqlLeaseClockSkew.name();
/// `mysql-lease-dbtime-pause`: `T` is the database's `NOW()`.
pub const LEASE_DB_TIME: &str = ScenarioId::MysqlLeaseDbtimePause.name();

impl LeaseLock {
    /// A handle on the lease row `key` (created, unowned, if missing); `db_time` takes
    /// `T` from the database instead of this process's clock.
    pub async fn new(session: Arc<Session>, key: &str, db_time: bool) -> Result<Self, LockError> {
        session.ensure_row(key).await?;
        Ok(Self::on_row(session, key, db_time))
    }

    /// A handle on a lease row someone already made ([`Session::ensure_row`]).
    pub fn on_row(session: Arc<Session>, key: &str, db_time: bool) -> Self {
        LeaseLock {
            session,
            key: key.into(),
            owner: fresh_owner(),
            db_time,
            ahead: std::time::Duration::ZERO,
        }
    }

    /// This client's clock runs `ahead` of true time (`mysql-lease-clock-skew`'s
    /// fault). Without effect on a lock that uses the database's clock.
    pub fn with_clock_ahead(self, ahead: std::time::Duration) -> Self {
        LeaseLock { ahead, ..self }
    }
}

impl DistributedLock for LeaseLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: if self.db_time {
                LEASE_DB_TIME
            } else {
                LEASE_CLIENT_TIME
            },
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: false,
            teaching_only: !self.db_time,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let protocol = self.info().protocol;
            let ttl = lease.ttl().ok_or(LockError::Unsupported {
                protocol,
                what: "a lease without TTL",
            })?;
            let sent_at = Instant::now();
            let now = (!self.db_time).then(|| {
                let since = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    + self.ahead;
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
            let cmd = SqlCommand::LeaseAcquire {
                name: self.key.clone(),
                owner: self.owner.clone(),
                now,
                ttl: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            };
            match self.session.exec(cmd.clone()).await? {
                SqlReply::Rows(1) => {}
                SqlReply::Rows(0) => {
                    return Ok(Attempt::Busy {
                        retry_after: None,
                        reason: None,
                    })
                }
                other => return Err(unexpected(&cmd, &other)),
            }
            let held = Arc::new(RowHeld {
                session: self.session.clone(),
                key: self.key.clone(),
                release: SqlCommand::LeaseRelease {
                    name: self.key.clone(),
                    owner: self.owner.clone(),
                },
            });
            Ok(Attempt::Acquired(LockGuard::new(
                protocol, &self.key, None, held, lease, sent_at,
            )))
        })
    }
}

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
                    return Ok(Attempt::Busy {
                        retry_after: None,
                        reason: None,
                    })
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

/// Which transaction lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxKind {
    /// `SELECT … FOR UPDATE NOWAIT` on the lock's row.
    ForUpdate,
    /// `pg_try_advisory_xact_lock(key)`.
    AdvisoryXact,
}

/// `sql-for-update`.
pub const FOR_UPDATE: &str = ScenarioId::SqlForUpdate.name();
/// `pg-advisory-xact`.
pub const ADVISORY_XACT: &str = ScenarioId::PgAdvisoryXact.name();

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
            },
            key: self.key.clone(),
            owner: format!("session {}", self.session.id()),
            reentrant: false,
            fenced: false,
            teaching_only: false,
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
                return Ok(Attempt::Busy {
                    retry_after: None,
                    reason: None,
                });
            }
            let held = Arc::new(TxHeld {
                session: self.session.clone(),
                key: self.key.clone(),
            });
            let protocol = self.info().protocol;
            Ok(Attempt::Acquired(LockGuard::new(
                protocol, &self.key, None, held, lease, sent_at,
            )))
        })
    }
}
