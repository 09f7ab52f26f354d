//! The ephemeral-sequential lock recipe on ZooKeeper (Curator's `InterProcessMutex`),
//! on `zookeeper-client`'s primitives: each owner creates
//! `/lock/<owner>-n-<sequence>` EPHEMERAL_SEQUENTIAL in its session (the owner id in the
//! name lets a create retried after a lost reply find the node it already made), lists
//! `/lock`, and owns the lock when its node has the lowest sequence; otherwise it
//! watches only its predecessor (`exists` with a watch: one wake-up per release, no
//! herd). Releasing deletes its node; the session's end (expiry, close, crash) deletes
//! it too. The node's `czxid` is the fencing token: it only grows from one node to the
//! next.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::attempt::{Attempt, AttemptObserver, Queued};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id of the recipe.
pub const PROTOCOL: &str = "zk-sequential";

/// The lock's parent node.
pub const LOCK_DIR: &str = "/lock";

/// How long one attempt waits on its predecessor's watch before it reports busy (the
/// wait loop then tries again at once, so a release is seen within this).
const WATCH_SLICE: Duration = Duration::from_millis(200);

fn backend(e: zk::Error) -> LockError {
    LockError::backend(e)
}

/// A session on `connect_string` (`host:port,…`) asking for `session_timeout`, with
/// `/lock` made if missing.
pub async fn connect(
    connect_string: &str,
    session_timeout: Duration,
) -> Result<zk::Client, LockError> {
    let client = zk::Client::connector()
        .with_session_timeout(session_timeout)
        .connect(connect_string)
        .await
        .map_err(backend)?;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match client.create(LOCK_DIR, &[], &persistent).await {
        Ok(_) | Err(zk::Error::NodeExists) => Ok(client),
        Err(e) => Err(backend(e)),
    }
}

/// The sequence number ZooKeeper appended to a node's name (its last ten digits).
fn sequence(name: &str) -> Option<u64> {
    name.get(name.len().checked_sub(10)?..)?.parse().ok()
}

/// One owner of the lock, on its own session.
#[derive(Debug)]
pub struct RecipeLock {
    client: zk::Client,
    owner: String,
    fenced: bool,
    /// Its node's name under `/lock` and czxid, once created.
    node: Arc<Mutex<Option<(String, i64)>>>,
}

struct Held {
    client: zk::Client,
    path: String,
    node: Arc<Mutex<Option<(String, i64)>>>,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let deleted = self.client.delete(&self.path, None).await;
            *self.node.lock().unwrap_or_else(|p| p.into_inner()) = None;
            match deleted {
                Ok(()) => Ok(()),
                // Gone with the session: it was not ours any more.
                Err(zk::Error::NoNode) => Err(LockError::NotHeld {
                    key: self.path.clone(),
                }),
                Err(e) => Err(backend(e)),
            }
        })
    }
}

impl RecipeLock {
    /// A handle for `owner` (letters, digits and `_` only: it is part of a node name)
    /// on `client`'s session.
    pub fn new(client: zk::Client, owner: &str) -> Self {
        RecipeLock {
            client,
            owner: owner.into(),
            fenced: true,
            node: Arc::default(),
        }
    }

    /// The same lock whose guards carry no token.
    pub fn unfenced(mut self) -> Self {
        self.fenced = false;
        self
    }

    /// The session's id, as the server names it.
    pub fn session_id(&self) -> i64 {
        self.client.session_id().0
    }

    fn my_node(&self) -> Option<(String, i64)> {
        self.node.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Our node: created at the first attempt, or found again by its owner prefix when a
    /// create's reply was lost.
    async fn ensure_node(&self) -> Result<(String, i64), LockError> {
        if let Some(n) = self.my_node() {
            return Ok(n);
        }
        let prefix = format!("{}-n-", self.owner);
        let mode = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let made = match self
            .client
            .create(&format!("{LOCK_DIR}/{prefix}"), &[], &mode)
            .await
        {
            Ok((stat, seq)) => (format!("{prefix}{seq}"), stat.czxid),
            Err(zk::Error::ConnectionLoss) => {
                // The create may have happened: look for our node before making another.
                let (children, _) = self.client.get_children(LOCK_DIR).await.map_err(backend)?;
                let Some(name) = children.into_iter().find(|c| c.starts_with(&prefix)) else {
                    return Err(backend(zk::Error::ConnectionLoss));
                };
                let (_, stat) = self
                    .client
                    .get_data(&format!("{LOCK_DIR}/{name}"))
                    .await
                    .map_err(backend)?;
                (name, stat.czxid)
            }
            Err(e) => return Err(backend(e)),
        };
        *self.node.lock().unwrap_or_else(|p| p.into_inner()) = Some(made.clone());
        Ok(made)
    }

    async fn attempt(&self, lease: Lease) -> Result<Attempt, LockError> {
        let sent_at = Instant::now();
        let (name, czxid) = self.ensure_node().await?;
        let (mut children, _) = self.client.get_children(LOCK_DIR).await.map_err(backend)?;
        children.sort_by_key(|c| sequence(c));
        let Some(at) = children.iter().position(|c| *c == name) else {
            // Our node is gone: our session expired while we waited.
            *self.node.lock().unwrap_or_else(|p| p.into_inner()) = None;
            return Err(LockError::NotHeld {
                key: format!("{LOCK_DIR}/{name}"),
            });
        };
        if at == 0 {
            let held = Arc::new(Held {
                client: self.client.clone(),
                path: format!("{LOCK_DIR}/{name}"),
                node: self.node.clone(),
            });
            let token = u64::try_from(czxid).ok().filter(|_| self.fenced);
            // The guard names the node, which a write checked against the lock needs.
            return Ok(Attempt::Acquired(LockGuard::new(
                PROTOCOL,
                format!("{LOCK_DIR}/{name}"),
                token,
                held,
                lease,
                sent_at,
            )));
        }
        // Watch only the node just before ours, for one slice of the wait.
        let before = format!("{LOCK_DIR}/{}", children[at - 1]);
        let (stat, watcher) = self
            .client
            .check_and_watch_stat(&before)
            .await
            .map_err(backend)?;
        if stat.is_some() {
            let _ = tokio::time::timeout(WATCH_SLICE, watcher.changed()).await;
        }
        Ok(Attempt::Busy {
            retry_after: Some(Duration::ZERO),
        })
    }
}

impl DistributedLock for RecipeLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: LOCK_DIR.into(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: self.fenced,
            teaching_only: false,
        }
    }

    /// Queued: one operation from joining the queue to the grant ([`Queued`]), since
    /// the node holds the waiter's place between attempts.
    fn acquire_observed<'a>(
        &'a self,
        wait: Duration,
        lease: Lease,
        observer: &'a dyn AttemptObserver,
    ) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        Box::pin(async move {
            let queued = Queued::new(observer);
            let result = crate::retry::acquire_loop(self, wait, lease, None, &queued).await;
            if let Err(e) = &result {
                queued.close(&e.to_string());
            }
            result
        })
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(self.attempt(lease))
    }
}
