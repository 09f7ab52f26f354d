//! etcd's own lock, the server-side `Lock` RPC (etcd-client's `lock()`), behind
//! [`DistributedLock`]: the caller's session lease is kept alive by a task, each try is
//! one `Lock` call on it that the server answers once the lock is the caller's, and the
//! release is `Unlock` of the key it answered with. Whether the server checks that the
//! caller's key still exists before it answers is the question of
//! `etcd-lock-expired-waiter` (etcd issue 11456).

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::etcd::spec::{EtcdCommand, EtcdReply};
use tokio::sync::OnceCell;

use super::lease::SessionLease;
use super::recipe::unexpected;
use super::session::EtcdSession;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::EtcdLockExpiredWaiter.name();

/// One owner of etcd's `Lock` RPC lock `name` on one session lease.
#[derive(Debug)]
pub struct LockRpcLock {
    session: EtcdSession,
    /// The connection the `Lock` calls wait on, with no request timeout; made at first
    /// use.
    waiting: OnceCell<EtcdSession>,
    name: String,
    owner: String,
    ttl: Duration,
    lease: SessionLease,
}

struct Held {
    session: EtcdSession,
    key: String,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let cmd = EtcdCommand::Unlock {
                key: self.key.clone(),
            };
            match self.session.exec(cmd.clone()).await? {
                EtcdReply::Unlocked => Ok(()),
                other => Err(unexpected(&cmd, &other)),
            }
        })
    }
}

impl LockRpcLock {
    /// A handle for `owner` on lock `name` with a session lease of `ttl`.
    pub fn new(session: EtcdSession, name: &str, owner: &str, ttl: Duration) -> Self {
        LockRpcLock {
            session,
            waiting: OnceCell::new(),
            name: name.into(),
            owner: owner.into(),
            ttl,
            lease: SessionLease::default(),
        }
    }

    async fn attempt(&self, lease_kind: Lease) -> Result<Attempt, LockError> {
        let sent_at = Instant::now();
        // A lease the keep-alives found gone is replaced before the call.
        if self.lease.lapsed() {
            self.lease.forget();
        }
        let lease = self.lease.id(&self.session, self.ttl).await?;
        let waiting = self
            .waiting
            .get_or_try_init(|| self.session.without_timeout())
            .await?;
        let cmd = EtcdCommand::Lock {
            name: self.name.clone(),
            lease,
        };
        match waiting.exec(cmd.clone()).await? {
            EtcdReply::Locked { key } => {
                let held = Arc::new(Held {
                    session: self.session.clone(),
                    key: key.clone(),
                });
                Ok(Attempt::Acquired(LockGuard::new(
                    PROTOCOL, key, None, held, lease_kind, sent_at,
                )))
            }
            // Refused: the lease is gone, so nothing of ours is queued.
            EtcdReply::LeaseNotFound => {
                self.lease.forget();
                Ok(Attempt::Busy {
                    retry_after: Some(Duration::ZERO),
                    reason: None,
                })
            }
            other => Err(unexpected(&cmd, &other)),
        }
    }
}

impl DistributedLock for LockRpcLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: self.name.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: false,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(self.attempt(lease))
    }
}
