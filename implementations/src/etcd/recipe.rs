//! The `concurrency.Mutex` recipe behind [`DistributedLock`], written with the spec's
//! requests (the steps the model's clients take): a session lease kept alive by a
//! task, `txn if create_revision(lock/<lease>) = 0 then put … --lease else get …` with
//! the owner (`lock/` sorted by create revision) read in the same `Txn`, the lowest
//! create revision owns. A waiter's attempt asks whether the key created just before
//! its own is gone and then that its own key still exists; between attempts it sleeps
//! until a watch on that key reports its deletion (or a back-off passes). The fencing token is the
//! key's create revision; [`RecipeLock::guarded_put`] is the protected write as a `Txn`
//! guarded by it (Jepsen's `lock-etcd-set`).

use locklab_models::registry::ScenarioId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use locklab_models::etcd::spec::{
    guarded_by, recipe_key, Compare, EtcdCommand, EtcdReply, LOCK_PREFIX,
};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::lease::SessionLease;
use super::session::EtcdSession;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use crate::{Acquire, Acquiring};

/// The catalog id of the recipe.
pub const PROTOCOL: &str = ScenarioId::EtcdLeasePause.name();

/// One owner of the recipe lock on one session lease.
#[derive(Debug)]
pub struct RecipeLock {
    session: EtcdSession,
    owner: String,
    ttl: Duration,
    fenced: bool,
    lease: SessionLease,
    /// The create revision of this session's key once made (0: none).
    my_rev: Arc<AtomicU64>,
    /// Woken when the key this waiter waits for is deleted.
    wake: Arc<Notify>,
    /// The watch on that key.
    watch: Mutex<Option<(String, JoinHandle<()>)>>,
}

pub(super) fn unexpected(cmd: &EtcdCommand, reply: &EtcdReply) -> LockError {
    LockError::UnexpectedReply {
        command: locklab_models::etcd::spec::command_text(cmd),
        reply: locklab_models::etcd::spec::reply_text(reply),
    }
}

struct Held {
    session: EtcdSession,
    key: String,
    my_rev: Arc<AtomicU64>,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let reply = self
                .session
                .exec(EtcdCommand::Delete {
                    key: self.key.clone(),
                })
                .await?;
            self.my_rev.store(0, Ordering::Release);
            match reply {
                EtcdReply::Deleted { deleted: 1 } => Ok(()),
                _ => Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                }),
            }
        })
    }
}

impl RecipeLock {
    /// A handle for `owner` with a session lease of `ttl` (etcd rounds it up to whole
    /// seconds, 2 s at least).
    pub fn new(session: EtcdSession, owner: &str, ttl: Duration) -> Self {
        RecipeLock {
            session,
            owner: owner.into(),
            ttl,
            fenced: true,
            lease: SessionLease::default(),
            my_rev: Arc::default(),
            wake: Arc::default(),
            watch: Mutex::default(),
        }
    }

    fn watching(&self) -> std::sync::MutexGuard<'_, Option<(String, JoinHandle<()>)>> {
        self.watch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the waiting acquire once `key` (last written at `mod_rev`) is deleted.
    fn wake_when_deleted(&self, key: &str, mod_rev: u64) {
        let mut w = self.watching();
        if w.as_ref()
            .is_some_and(|(k, t)| k == key && !t.is_finished())
        {
            return;
        }
        if let Some((_, t)) = w.take() {
            t.abort();
        }
        let (session, wake, watched) = (self.session.clone(), self.wake.clone(), key.to_string());
        let task = tokio::spawn(async move {
            // A failed watch wakes nobody: the waiter's back-off asks again.
            if session.deleted(&watched, mod_rev).await {
                wake.notify_one();
            }
        });
        *w = Some((key.to_string(), task));
    }

    fn stop_watching(&self) {
        if let Some((_, t)) = self.watching().take() {
            t.abort();
        }
    }

    /// The same lock whose guards carry no token, for a resource that checks none
    /// (Jepsen's `lock-set`).
    pub fn unfenced(mut self) -> Self {
        self.fenced = false;
        self
    }

    /// Stops keeping the session lease alive, as a dead or cut-off client does.
    pub fn stop_keep_alive(&self) {
        self.lease.stop();
    }

    /// The write `key = value` as a `Txn` guarded by the lock key's create revision
    /// `token`: whether it was applied (false: the lock is no longer ours).
    pub async fn guarded_put(&self, token: u64, key: &str, value: &str) -> Result<bool, LockError> {
        let lease = self.lease.id(&self.session, self.ttl).await?;
        let put = EtcdCommand::Put {
            key: key.into(),
            value: value.into(),
            lease: None,
        };
        let cmd = guarded_by(&recipe_key(lease), token, put);
        match self.session.exec(cmd.clone()).await? {
            EtcdReply::Txn { succeeded, .. } => Ok(succeeded),
            other => Err(unexpected(&cmd, &other)),
        }
    }

    async fn attempt(&self, lease_kind: Lease) -> Result<Attempt, LockError> {
        let sent_at = Instant::now();
        let lease = self.lease.id(&self.session, self.ttl).await?;
        let key = recipe_key(lease);
        let my_rev = self.my_rev.load(Ordering::Acquire);
        let granted = if my_rev == 0 {
            let put = EtcdCommand::Put {
                key: key.clone(),
                value: self.owner.clone(),
                lease: Some(lease),
            };
            let first = EtcdCommand::FirstCreate {
                prefix: LOCK_PREFIX.into(),
            };
            let cmd = EtcdCommand::Txn {
                compare: vec![Compare::CreateRevision {
                    key: key.clone(),
                    rev: 0,
                }],
                success: vec![put, first.clone()],
                failure: vec![EtcdCommand::Get { key: key.clone() }, first],
            };
            let reply = self.session.exec(cmd.clone()).await?;
            let EtcdReply::Txn { responses, .. } = &reply else {
                self.lease.forget();
                return Err(unexpected(&cmd, &reply));
            };
            let mine = match (responses.first(), responses.last()) {
                (Some(EtcdReply::Put { revision }), _) => *revision,
                (Some(EtcdReply::Kvs(kvs)), _) => kvs.first().map_or(0, |k| k.1.create_rev),
                _ => 0,
            };
            let owner = match responses.last() {
                Some(EtcdReply::Kvs(kvs)) => kvs.first().map_or(0, |k| k.1.create_rev),
                _ => 0,
            };
            self.my_rev.store(mine, Ordering::Release);
            (mine == owner && mine > 0).then_some(mine)
        } else {
            let wait = EtcdCommand::LastCreateBefore {
                prefix: LOCK_PREFIX.into(),
                max_create_rev: my_rev - 1,
            };
            match self.session.exec(wait).await? {
                EtcdReply::Kvs(k) if k.is_empty() => {
                    // The keys before ours are gone: ours must still be there, or our
                    // session expired while we waited.
                    match self
                        .session
                        .exec(EtcdCommand::Get { key: key.clone() })
                        .await?
                    {
                        EtcdReply::Kvs(k)
                            if k.first().is_some_and(|k| k.1.create_rev == my_rev) =>
                        {
                            Some(my_rev)
                        }
                        _ => {
                            self.my_rev.store(0, Ordering::Release);
                            self.lease.forget();
                            self.stop_watching();
                            return Err(LockError::NotHeld { key, reason: None });
                        }
                    }
                }
                EtcdReply::Kvs(k) => {
                    if let Some((before, kv)) = k.first() {
                        self.wake_when_deleted(before, kv.mod_rev);
                    }
                    None
                }
                _ => None,
            }
        };
        Ok(match granted {
            Some(token) => {
                self.stop_watching();
                let held = Arc::new(Held {
                    session: self.session.clone(),
                    key: key.clone(),
                    my_rev: self.my_rev.clone(),
                });
                Attempt::Acquired(LockGuard::new(
                    PROTOCOL,
                    key,
                    self.fenced.then_some(token),
                    held,
                    lease_kind,
                    sent_at,
                ))
            }
            None => Attempt::busy(),
        })
    }
}

impl DistributedLock for RecipeLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: LOCK_PREFIX.into(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: self.fenced,
            teaching_only: false,
        }
    }

    /// Queued: one operation from the first try to the grant ([`Queued`](crate::attempt::Queued)).
    fn acquire_observed<'a>(&'a self, call: Acquire<'a>) -> Acquiring<'a> {
        Box::pin(crate::retry::acquire_queued(self, call, Some(&self.wake)))
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(self.attempt(lease))
    }
}

impl Drop for RecipeLock {
    fn drop(&mut self) {
        self.stop_watching();
    }
}
