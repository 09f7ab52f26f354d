//! `zookeeper-client`'s own lock, `Client::lock`, behind `DistributedLock`: Curator's
//! layout (`/lock/_c_<uuid>-lock-<sequence>`, a fresh uuid per acquire, so a create
//! whose reply was lost is found again by its prefix), the lowest sequence owns, a
//! waiter watches its predecessor. What it hands back is the lock node
//! (`OwnedLockClient`), whose writes are `multi`s checked against it; it says nothing
//! when the session is suspended or lost, so a holder that uses it as a plain lock is
//! exactly as safe as the recipe without its state watch. Its requests are the
//! library's, not recorded.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::attempt::{Attempt, AttemptOutcome};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use crate::{Acquire, Acquiring};

use super::recipe::LOCK_DIR;

/// The protocol id in reports.
pub const PROTOCOL: &str = "zookeeper-client lock";

/// How long `try_acquire` waits in the queue before it gives its place up.
const TRY_SLICE: Duration = Duration::from_millis(200);

/// The library's lock on one session.
#[derive(Debug)]
pub struct LibraryLock {
    client: zk::Client,
    owner: String,
}

struct Held {
    lock: Mutex<Option<zk::OwnedLockClient>>,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let Some(lock) = self.lock.lock().unwrap_or_else(|p| p.into_inner()).take() else {
                return Ok(());
            };
            let path = lock.lock_path().to_string();
            // Deleted here to hear the answer; dropping the lock client afterwards sends
            // its own background delete, which finds nothing.
            let deleted = lock.client().delete(&path, None).await;
            drop(lock);
            match deleted {
                Ok(()) => Ok(()),
                Err(zk::Error::NoNode | zk::Error::SessionExpired) => Err(LockError::NotHeld {
                    key: path,
                    reason: None,
                }),
                Err(e) => Err(LockError::backend(e)),
            }
        })
    }
}

impl LibraryLock {
    /// The library's lock under `/lock` on `client`'s session, for `owner` (a name in
    /// reports: the library tells owners apart by their session and a uuid).
    pub fn new(client: zk::Client, owner: &str) -> Self {
        LibraryLock {
            client,
            owner: owner.to_string(),
        }
    }

    /// Waits in the library's queue for up to `wait`; `None` when it gave its place up
    /// (the library deletes the node it made).
    async fn queue(
        &self,
        wait: Duration,
        lease: Lease,
    ) -> Result<Option<(LockGuard, Option<u64>)>, LockError> {
        let _ = lease;
        let sent_at = Instant::now();
        let prefix = zk::LockPrefix::new_curator(LOCK_DIR, "lock-").map_err(LockError::backend)?;
        let acls = zk::LockOptions::new(zk::Acls::anyone_all());
        let locked = match tokio::time::timeout(wait, self.client.lock(prefix, &[], acls)).await {
            Err(_) => return Ok(None),
            Ok(r) => r.map_err(LockError::backend)?.into_owned(),
        };
        let path = locked.lock_path().to_string();
        let token = match self.client.get_data(&path).await {
            Ok((_, stat)) => u64::try_from(stat.czxid).ok(),
            Err(_) => None,
        };
        let held = Arc::new(Held {
            lock: Mutex::new(Some(locked)),
        });
        let guard = LockGuard::new(PROTOCOL, path, token, held, Lease::Unbounded, sent_at);
        Ok(Some((guard, token)))
    }
}

impl DistributedLock for LibraryLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: LOCK_DIR.into(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: true,
            teaching_only: false,
        }
    }

    /// One operation from the create to the grant, as the library waits in its own
    /// loop (as the recipe's queued acquire).
    fn acquire_observed<'a>(&'a self, call: Acquire<'a>) -> Acquiring<'a> {
        let Acquire {
            wait,
            lease,
            observer,
        } = call;
        Box::pin(async move {
            observer.started();
            match self.queue(wait, lease).await {
                Ok(Some((guard, token))) => {
                    observer.ended(AttemptOutcome::Granted { token, lease: None });
                    Ok(guard)
                }
                Ok(None) => {
                    observer.ended(AttemptOutcome::Unknown("gave its place in the queue up"));
                    Err(LockError::Timeout {
                        key: LOCK_DIR.into(),
                        waited: wait,
                        last_error: None,
                    })
                }
                Err(e) => {
                    observer.ended(AttemptOutcome::Unknown(&e.to_string()));
                    Err(e)
                }
            }
        })
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            Ok(match self.queue(TRY_SLICE, lease).await? {
                Some((guard, _)) => Attempt::Acquired(guard),
                None => Attempt::busy(),
            })
        })
    }
}
