//! The single-key etcd lock of `etcd-unlock-retry`: `txn if create_revision(lock) = 0
//! then put lock <owner> --lease=<session lease>`, released by `del lock` — and, when
//! the delete's reply is lost, released again by the same `del lock` after a pause, as
//! a client that retries a failed request does. By then the key may be someone else's:
//! the retry deletes a later holder's lock. Guarded (`etcd-unlock-retry-guarded`), the
//! release is `txn if create_revision(lock) = <mine> then del lock`, which a retry can
//! repeat harmlessly.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::etcd::spec::{release_request, Compare, EtcdCommand, EtcdReply, LOCK_KEY};

use super::lease::SessionLease;
use super::recipe::unexpected;
use super::session::EtcdSession;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id of the lock released by name.
pub const PROTOCOL: &str = ScenarioId::EtcdUnlockRetry.name();

/// The catalog id of the lock whose release is guarded by the key's create revision.
pub const PROTOCOL_GUARDED: &str = ScenarioId::EtcdUnlockRetryGuarded.name();

/// How long a release waits before it sends again a delete whose reply did not come.
pub const RETRY_AFTER: Duration = Duration::from_millis(200);

/// How many times a release is sent at most.
pub(super) const RELEASE_TRIES: u32 = 5;

/// One owner of the single-key lock on one session lease.
#[derive(Debug)]
pub struct SingleKeyLock {
    session: EtcdSession,
    owner: String,
    ttl: Duration,
    guarded_release: bool,
    lease: SessionLease,
}

struct Held {
    session: EtcdSession,
    release: EtcdCommand,
}

/// Whether a release's reply says it removed the key.
fn removed(reply: &EtcdReply) -> Option<bool> {
    match reply {
        EtcdReply::Deleted { deleted } => Some(*deleted == 1),
        EtcdReply::Txn {
            succeeded,
            responses,
        } => {
            Some(*succeeded && matches!(responses.first(), Some(EtcdReply::Deleted { deleted: 1 })))
        }
        _ => None,
    }
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let mut last = None;
            for tried in 0..RELEASE_TRIES {
                if tried > 0 {
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                match self.session.exec(self.release.clone()).await {
                    Ok(reply) => {
                        return match removed(&reply) {
                            Some(true) => Ok(()),
                            // The key was not there (or not ours): after a lost reply
                            // the first delete may have been the one that removed it.
                            Some(false) if tried > 0 => Err(LockError::backend(
                                std::io::Error::other(format!(
                                    "the release's reply was lost, and its retry removed nothing: the lost one may have ({})",
                                    locklab_models::etcd::spec::reply_text(&reply)
                                )),
                            )),
                            Some(false) => Err(LockError::NotHeld {
                                key: LOCK_KEY.into(),
                                reason: None,
                            }),
                            None => Err(unexpected(&self.release, &reply)),
                        };
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or(LockError::NotHeld {
                key: LOCK_KEY.into(),
                reason: None,
            }))
        })
    }
}

impl SingleKeyLock {
    /// A handle for `owner` with a session lease of `ttl`, released by name.
    pub fn new(session: EtcdSession, owner: &str, ttl: Duration) -> Self {
        SingleKeyLock {
            session,
            owner: owner.into(),
            ttl,
            guarded_release: false,
            lease: SessionLease::default(),
        }
    }

    /// The same lock released by `txn if create_revision(lock) = <mine> then del lock`.
    pub fn guarded(mut self) -> Self {
        self.guarded_release = true;
        self
    }

    async fn attempt(&self, lease_kind: Lease) -> Result<Attempt, LockError> {
        let sent_at = Instant::now();
        let lease = self.lease.id(&self.session, self.ttl).await?;
        let cmd = EtcdCommand::Txn {
            compare: vec![Compare::CreateRevision {
                key: LOCK_KEY.into(),
                rev: 0,
            }],
            success: vec![EtcdCommand::Put {
                key: LOCK_KEY.into(),
                value: self.owner.clone(),
                lease: Some(lease),
            }],
            failure: vec![],
        };
        let reply = self.session.exec(cmd.clone()).await?;
        let my_rev = match &reply {
            EtcdReply::Txn {
                succeeded: true,
                responses,
            } => match responses.first() {
                Some(EtcdReply::Put { revision }) => *revision,
                _ => return Err(unexpected(&cmd, &reply)),
            },
            EtcdReply::Txn {
                succeeded: false, ..
            } => {
                return Ok(Attempt::busy())
            }
            // The session lease is gone: nothing was put; the next try takes a new one.
            EtcdReply::LeaseNotFound => {
                self.lease.forget();
                return Ok(Attempt::Busy {
                    retry_after: Some(Duration::ZERO),
                    reason: None,
                });
            }
            _ => return Err(unexpected(&cmd, &reply)),
        };
        let held = Arc::new(Held {
            session: self.session.clone(),
            release: release_request(LOCK_KEY, self.guarded_release.then_some(my_rev)),
        });
        // No token: the row's counter checks none (the create revision would be one).
        Ok(Attempt::Acquired(LockGuard::new(
            self.info().protocol,
            LOCK_KEY,
            None,
            held,
            lease_kind,
            sent_at,
        )))
    }
}

impl DistributedLock for SingleKeyLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: if self.guarded_release {
                PROTOCOL_GUARDED
            } else {
                PROTOCOL
            },
            key: LOCK_KEY.into(),
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
