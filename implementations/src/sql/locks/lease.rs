//! The lease-row lock: `UPDATE … WHERE last_lock_time < T - ttl` to take the row,
//! `T` the client's clock or the database's, released by `UPDATE … WHERE owner = ?`.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use locklab_models::registry::ScenarioId;
use locklab_models::sql::spec::{SqlCommand, SqlReply};

use super::super::session::Session;
use super::{fresh_owner, unexpected, RowHeld};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// A lease row: `UPDATE locks SET owner, last_lock_time = T WHERE name AND
/// last_lock_time < T - ttl`, released by `UPDATE … WHERE owner = ?`.
#[derive(Clone, Debug)]
pub struct LeaseLock {
    session: Arc<Session>,
    key: String,
    owner: String,
    db_time: bool,
    /// The expiry is checked by the `UPDATE` itself; otherwise by a `SELECT` before an
    /// unconditional `UPDATE` (`mysql-lease-no-cas`).
    cas: bool,
    /// How far this client's clock runs ahead (the skew fault, without faking the
    /// whole process's clock).
    ahead: std::time::Duration,
}

/// `mysql-lease-clock-skew`: `T` from the client's clock.
pub const LEASE_CLIENT_TIME: &str = ScenarioId::MysqlLeaseClockSkew.name();
/// `mysql-lease-dbtime-pause`: `T` is the database's `NOW()`.
pub const LEASE_DB_TIME: &str = ScenarioId::MysqlLeaseDbtimePause.name();
/// `mysql-lease-no-cas`: checked by a `SELECT`, taken by an unconditional `UPDATE`.
pub const LEASE_NO_CAS: &str = ScenarioId::MysqlLeaseNoCas.name();

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
            cas: true,
            ahead: std::time::Duration::ZERO,
        }
    }

    /// Check-then-set, as the write-up warns against: a `SELECT` sees the lease free or
    /// expired, then an `UPDATE … WHERE name = ?` takes the row whatever happened in
    /// between. Two clients can both take it (`mysql-lease-no-cas`); for teaching.
    pub fn check_then_set(self) -> Self {
        LeaseLock { cas: false, ..self }
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
            protocol: match (self.cas, self.db_time) {
                (false, _) => LEASE_NO_CAS,
                (true, true) => LEASE_DB_TIME,
                (true, false) => LEASE_CLIENT_TIME,
            },
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: false,
            teaching_only: !self.db_time || !self.cas,
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
            let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            if !self.cas {
                let check = SqlCommand::LeaseCheck {
                    name: self.key.clone(),
                    now,
                    ttl,
                };
                match self.session.exec(check.clone()).await? {
                    SqlReply::Rows(1) => {}
                    SqlReply::Rows(0) => return Ok(Attempt::busy()),
                    other => return Err(unexpected(&check, &other)),
                }
            }
            let cmd = if self.cas {
                SqlCommand::LeaseAcquire {
                    name: self.key.clone(),
                    owner: self.owner.clone(),
                    now,
                    ttl,
                }
            } else {
                SqlCommand::LeaseTake {
                    name: self.key.clone(),
                    owner: self.owner.clone(),
                    now,
                }
            };
            match self.session.exec(cmd.clone()).await? {
                SqlReply::Rows(1) => {}
                SqlReply::Rows(0) => return Ok(Attempt::busy()),
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
