//! The unique-key lock: `INSERT` a row with a unique name to lock, `DELETE` it to
//! release, by name or by its auto-increment id (the id a fencing token); and the reaper
//! job the write-ups pair with it.

use std::sync::Arc;
use std::time::Instant;

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

/// The reaper job: `DELETE FROM locks WHERE created < NOW() - ttl`; the rows deleted.
pub async fn reap(session: &Session, ttl: std::time::Duration) -> Result<u64, LockError> {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    match session.exec(SqlCommand::Reap { ttl: ms }).await? {
        SqlReply::Rows(n) => Ok(n),
        other => Err(unexpected(&SqlCommand::Reap { ttl: ms }, &other)),
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
                    return Ok(Attempt::busy())
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
