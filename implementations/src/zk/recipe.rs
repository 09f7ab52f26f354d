//! The ephemeral-sequential lock recipe on ZooKeeper (Curator's `InterProcessMutex`),
//! every request one of the spec's sent through a recorded [`ZkSession`]. Each owner
//! creates a node EPHEMERAL_SEQUENTIAL under `/lock` in its session, lists `/lock`, and
//! owns the lock when its node has the lowest sequence; otherwise it waits for a watch.
//! Releasing deletes its node; the session's end (expiry, close, crash) deletes it too.
//! The node's `czxid` is the fencing token: it only grows from one node to the next.
//!
//! How it is written is the model's [`Recipe`], so a catalog row's variant runs as the
//! model states it:
//! - `protected`: the name carries the owner id and the number of the owner's
//!   acquisition (`/lock/<owner>-<acquisition>-n-<sequence>`), so a create retried after
//!   a lost reply first looks for the node this acquisition already made — never one an
//!   earlier acquisition's unconfirmed release left behind, which its guaranteed delete
//!   may still remove (Curator's protected mode takes a fresh id per acquisition for
//!   the same reason); without it (`/lock/n-<sequence>`) the retry is blind and the
//!   first node is left behind;
//! - `watch_on`: a waiter watches only its predecessor (`exists` with a watch: one
//!   wake-up per release), or `/lock`'s children (every waiter wakes at every change);
//! - `stop_at_suspended`: the guard is lost as soon as the connection is (Curator's
//!   SUSPENDED, before the server can have expired the session), or only when the
//!   client is told the session expired (LOST).
//! - `sequential` false: not the recipe but the plain-znode spin lock
//!   (`zk-plain-znode`): every owner creates the one ephemeral node `/lock/holder`, the
//!   create that succeeds owns, the others watch that node and create again when it goes.

use locklab_models::registry::ScenarioId;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use locklab_models::zk::model::{Recipe, WatchOn, PLAIN_NODE};
use locklab_models::zk::spec::{sequence, ZkCommand, ZkError, ZkReply};
use zookeeper_client as zk;

use super::session::{Woken, ZkSession, ZkWatch};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use crate::ownership::{LostReason, Ownership};
use crate::{Acquire, Acquiring};

/// The catalog id of the recipe.
pub const PROTOCOL: &str = ScenarioId::ZkSequential.name();

/// The catalog id of the plain-znode spin lock (`Recipe::sequential` false).
pub const PLAIN_PROTOCOL: &str = ScenarioId::ZkPlainZnode.name();

/// The lock's parent node.
pub const LOCK_DIR: &str = "/lock";

/// How long one attempt waits on its watch before it reports busy (the wait loop then
/// tries again at once, waiting on the same watch, so a release is seen within this).
const WATCH_SLICE: Duration = Duration::from_millis(200);

/// How often, and how many times, a release whose delete got no answer tries again
/// (Curator's guaranteed delete): past a session timeout's worth, the session is gone
/// and its nodes with it.
const GUARANTEED_DELETE_PAUSE: Duration = Duration::from_millis(200);
const GUARANTEED_DELETE_TRIES: u32 = 100;

fn backend(e: zk::Error) -> LockError {
    LockError::backend(e)
}

/// A session on `connect_string` (`host:port,…`) asking for `session_timeout`, with
/// `/lock` made if missing (requests not recorded).
pub async fn connect(
    connect_string: &str,
    session_timeout: Duration,
) -> Result<zk::Client, LockError> {
    let client = zk::Client::connector()
        .with_session_timeout(session_timeout)
        .connect(connect_string)
        .await
        .map_err(backend)?;
    make_lock_dir(&ZkSession::over(client.clone(), Default::default())).await?;
    Ok(client)
}

/// Makes `/lock` (persistent) unless it is there.
pub async fn make_lock_dir(session: &ZkSession) -> Result<(), LockError> {
    let cmd = ZkCommand::Create {
        session: session.id(),
        path: LOCK_DIR.into(),
        data: String::new(),
        ephemeral: false,
        sequential: false,
    };
    match session.exec(cmd).await? {
        ZkReply::Created { .. } | ZkReply::Error(_) => Ok(()),
        other => Err(unexpected("create /lock", &other)),
    }
}

fn unexpected(what: &str, reply: &ZkReply) -> LockError {
    LockError::UnexpectedReply {
        command: what.to_string(),
        reply: format!("{reply:?}"),
    }
}

/// What the lock knows of its place in the queue.
#[derive(Default)]
struct Place {
    /// Its node's name under `/lock` and czxid, once created.
    node: Option<(String, u64)>,
    /// The watch it waits on, across attempts.
    watch: Option<ZkWatch>,
    /// Releases so far: the number of the acquisition under way, in its nodes' names.
    released: u64,
    /// A create of this acquisition got no answer and its node was not found since
    /// (the look itself failed): it may be there, so the next attempt looks first.
    unsure: bool,
}

/// One owner of the lock, on its own session.
pub struct RecipeLock {
    /// The session it locks in; replaced by a new one once the ensemble expired it.
    session: Mutex<ZkSession>,
    owner: String,
    recipe: Recipe,
    fenced: bool,
    place: Arc<Mutex<Place>>,
}

impl std::fmt::Debug for RecipeLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecipeLock")
            .field("owner", &self.owner)
            .field("recipe", &self.recipe)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

struct Held {
    session: ZkSession,
    path: String,
    place: Arc<Mutex<Place>>,
    /// Stops the session-state watcher of the guard.
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            if let Some(stop) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = stop.send(());
            }
            let cmd = ZkCommand::Delete {
                session: self.session.id(),
                path: self.path.clone(),
                version: None,
            };
            let deleted = self.session.exec(cmd.clone()).await;
            {
                let mut place = lock(&self.place);
                place.node = None;
                place.released += 1;
                place.unsure = false;
            }
            if deleted.is_err() {
                // No answer: the node may still be there, held by a session that lives
                // on and wedging every waiter behind it. Curator's guaranteed delete
                // goes on trying in the background until the delete (or the node's
                // absence) is confirmed or the session is gone; the release itself
                // stays unknown.
                let session = self.session.clone();
                tokio::spawn(async move {
                    for _ in 0..GUARANTEED_DELETE_TRIES {
                        tokio::time::sleep(GUARANTEED_DELETE_PAUSE).await;
                        if session.exec(cmd.clone()).await.is_ok() {
                            return;
                        }
                    }
                });
            }
            match deleted? {
                ZkReply::Ok => Ok(()),
                // Gone with the session: it was not ours any more.
                ZkReply::Error(_) => Err(LockError::NotHeld {
                    key: self.path.clone(),
                    reason: None,
                }),
                other => Err(unexpected("delete", &other)),
            }
        })
    }
}

fn lock(place: &Mutex<Place>) -> std::sync::MutexGuard<'_, Place> {
    place.lock().unwrap_or_else(|p| p.into_inner())
}

impl RecipeLock {
    /// A handle for `owner` (letters, digits and `_` only: it is part of a node name)
    /// on `session`, written as Curator's `InterProcessMutex` asks to be used: owner id
    /// in the name, predecessor watch, SUSPENDED treated as lost ([`Recipe::CURATOR`]).
    pub fn new(session: ZkSession, owner: &str) -> Self {
        RecipeLock {
            session: Mutex::new(session),
            owner: owner.into(),
            recipe: Recipe::CURATOR,
            fenced: true,
            place: Arc::default(),
        }
    }

    /// The same lock written as `recipe`.
    pub fn with_recipe(mut self, recipe: Recipe) -> Self {
        self.recipe = recipe;
        self
    }

    /// The same lock whose guards carry no token.
    pub fn unfenced(mut self) -> Self {
        self.fenced = false;
        self
    }

    /// The catalog row its recipe is.
    fn protocol(&self) -> &'static str {
        if self.recipe.sequential {
            PROTOCOL
        } else {
            PLAIN_PROTOCOL
        }
    }

    /// The session it locks in now.
    fn session(&self) -> ZkSession {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// After the ensemble expired the session (and every node of it), a new session
    /// for the next attempt, as Curator's client makes one after LOST: the process
    /// locks again instead of failing for ever. Its place in the queue went with the
    /// old session. A new session that cannot be opened now is tried at the next
    /// attempt.
    async fn renew_expired_session(&self) {
        let old = self.session();
        if !old.expired() {
            return;
        }
        if let Ok(new) = old.reopen().await {
            *self.session.lock().unwrap_or_else(|p| p.into_inner()) = new;
            let mut place = lock(&self.place);
            place.node = None;
            place.watch = None;
            place.unsure = false;
        }
    }

    /// The session's id, as the server names it.
    pub fn session_id(&self) -> u64 {
        self.session().id()
    }

    /// The prefix its creates ask for: with the owner id and the acquisition's number
    /// when protected.
    fn prefix(&self) -> String {
        if self.recipe.protected {
            format!("{}-{}-n-", self.owner, lock(&self.place).released)
        } else {
            "n-".to_string()
        }
    }

    fn my_node(&self) -> Option<(String, u64)> {
        lock(&self.place).node.clone()
    }

    fn list(&self, watch: bool) -> ZkCommand {
        ZkCommand::GetChildren {
            session: self.session().id(),
            path: LOCK_DIR.into(),
            watch,
        }
    }

    /// Our node: created at the first attempt; after a create whose reply was lost,
    /// found again by its owner prefix (protected) or made anew (blind).
    async fn ensure_node(&self) -> Result<(String, u64), LockError> {
        if let Some(n) = self.my_node() {
            return Ok(n);
        }
        let prefix = self.prefix();
        // Curator looks before it creates again: a second node of our own behind the
        // first would wait on itself until the session ends.
        if self.recipe.protected && lock(&self.place).unsure {
            if let Some(found) = self.find_node(&prefix).await? {
                let mut place = lock(&self.place);
                place.unsure = false;
                place.node = Some(found.clone());
                return Ok(found);
            }
            lock(&self.place).unsure = false;
        }
        let create = ZkCommand::Create {
            session: self.session().id(),
            path: format!("{LOCK_DIR}/{prefix}"),
            data: String::new(),
            ephemeral: true,
            sequential: true,
        };
        let made = match self.session().exec(create).await {
            Ok(ZkReply::Created { path, czxid }) => {
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                (name, czxid)
            }
            Ok(other) => return Err(unexpected("create", &other)),
            // The create may have happened. Blind: the next attempt creates again.
            Err(e) if !self.recipe.protected => return Err(e),
            Err(e) => {
                lock(&self.place).unsure = true;
                let found = self.find_node(&prefix).await?.ok_or(e)?;
                lock(&self.place).unsure = false;
                found
            }
        };
        lock(&self.place).node = Some(made.clone());
        Ok(made)
    }

    /// The node a lost create reply made, if it did: the child with our prefix.
    async fn find_node(&self, prefix: &str) -> Result<Option<(String, u64)>, LockError> {
        let ZkReply::Children(children) = self.session().exec(self.list(false)).await? else {
            return Ok(None);
        };
        let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) else {
            return Ok(None);
        };
        let get = ZkCommand::GetData {
            session: self.session().id(),
            path: format!("{LOCK_DIR}/{name}"),
        };
        match self.session().exec(get).await? {
            ZkReply::Stat(Some(n)) => Ok(Some((name, n.czxid))),
            _ => Ok(None),
        }
    }

    /// Waits one slice on the watch kept from an earlier attempt; `true` when there is
    /// none (or it fired) and the queue must be listed again.
    async fn waited(&self) -> bool {
        let Some(watch) = lock(&self.place).watch.take() else {
            return true;
        };
        match self.session().wait(watch, WATCH_SLICE).await {
            Woken::Fired | Woken::SessionEnded => true,
            Woken::Pending(w) => {
                lock(&self.place).watch = Some(w);
                false
            }
        }
    }

    async fn attempt(&self, _lease: Lease) -> Result<Attempt, LockError> {
        let busy = Ok(Attempt::Busy {
            retry_after: Some(Duration::ZERO),
            reason: None,
        });
        self.renew_expired_session().await;
        if !self.waited().await {
            return busy;
        }
        let sent_at = Instant::now();
        if !self.recipe.sequential {
            return self.attempt_plain(sent_at).await;
        }
        let (name, czxid) = self.ensure_node().await?;
        let herd = self.recipe.watch_on == WatchOn::Parent;
        let (reply, parent_watch) = self.session().exec_watched(self.list(herd)).await?;
        let ZkReply::Children(mut children) = reply else {
            // SESSIONEXPIRED: our node went with the session.
            lock(&self.place).node = None;
            return Err(LockError::NotHeld {
                key: format!("{LOCK_DIR}/{name}"),
                reason: None,
            });
        };
        children.sort_by_key(|c| sequence(c));
        let Some(at) = children.iter().position(|c| *c == name) else {
            // Our node is gone: our session expired while we waited.
            lock(&self.place).node = None;
            return Err(LockError::NotHeld {
                key: format!("{LOCK_DIR}/{name}"),
                reason: None,
            });
        };
        if at == 0 {
            return Ok(Attempt::Acquired(self.guard(name, czxid, sent_at)));
        }
        let watch = match parent_watch {
            Some(w) => w,
            None => {
                // Watch only the node just before ours.
                let exists = ZkCommand::Exists {
                    session: self.session().id(),
                    path: format!("{LOCK_DIR}/{}", children[at - 1]),
                    watch: true,
                };
                match self.session().exec_watched(exists).await? {
                    (ZkReply::Stat(Some(_)), Some(w)) => w,
                    // Gone already: list again at once (the watch, which would fire at
                    // the node's next creation, is dropped unread).
                    _ => return busy,
                }
            }
        };
        lock(&self.place).watch = Some(watch);
        self.waited().await;
        busy
    }

    /// The plain-znode spin lock: create the one node; when it is there, watch it and
    /// report busy (the next attempt waits on the watch, then creates again).
    async fn attempt_plain(&self, sent_at: Instant) -> Result<Attempt, LockError> {
        let busy = Ok(Attempt::Busy {
            retry_after: Some(Duration::ZERO),
            reason: None,
        });
        let path = format!("{LOCK_DIR}/{PLAIN_NODE}");
        let create = ZkCommand::Create {
            session: self.session().id(),
            path: path.clone(),
            data: String::new(),
            ephemeral: true,
            sequential: false,
        };
        match self.session().exec(create).await? {
            ZkReply::Created { czxid, .. } => {
                lock(&self.place).node = Some((PLAIN_NODE.to_string(), czxid));
                return Ok(Attempt::Acquired(self.guard(
                    PLAIN_NODE.to_string(),
                    czxid,
                    sent_at,
                )));
            }
            ZkReply::Error(ZkError::NodeExists) => {}
            other => return Err(unexpected("create", &other)),
        }
        let exists = ZkCommand::Exists {
            session: self.session().id(),
            path,
            watch: true,
        };
        if let (ZkReply::Stat(Some(_)), Some(w)) = self.session().exec_watched(exists).await? {
            lock(&self.place).watch = Some(w);
            self.waited().await;
        }
        // Gone already: create again at once.
        busy
    }

    /// The guard of a grant: no lease of its own (the session's pings keep the node),
    /// lost when the session state says so, as the recipe is written.
    fn guard(&self, name: String, czxid: u64, sent_at: Instant) -> LockGuard {
        let path = format!("{LOCK_DIR}/{name}");
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let held = Arc::new(Held {
            session: self.session().clone(),
            path: path.clone(),
            place: self.place.clone(),
            stop: Mutex::new(Some(stop)),
        });
        let token = Some(czxid).filter(|_| self.fenced);
        // The guard names the node, which a write checked against the lock needs.
        let guard = LockGuard::new(
            self.protocol(),
            path,
            token,
            held,
            Lease::Unbounded,
            sent_at,
        );
        watch_session(
            self.session().client(),
            Arc::downgrade(&guard.ownership()),
            self.recipe.stop_at_suspended,
            stopped,
        );
        guard
    }
}

/// Marks `ownership` lost when the session's state says the lock may be gone: at the
/// first disconnection when `at_suspended` (the server cannot have expired the session
/// yet), else only when the session expired or closed. Ends with the hold.
pub(crate) fn watch_session(
    client: &zk::Client,
    ownership: Weak<Ownership>,
    at_suspended: bool,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut states = client.state_watcher();
    tokio::spawn(async move {
        loop {
            let state = tokio::select! {
                s = states.changed() => s,
                _ = &mut stopped => return,
            };
            let reason = match state {
                zk::SessionState::Disconnected if at_suspended => LostReason::Disconnected,
                zk::SessionState::Expired
                | zk::SessionState::Closed
                | zk::SessionState::AuthFailed => LostReason::Expired,
                _ => continue,
            };
            if let Some(o) = ownership.upgrade() {
                o.mark_lost(reason);
            }
            return;
        }
    });
}

impl DistributedLock for RecipeLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: self.protocol(),
            key: LOCK_DIR.into(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: self.fenced,
            teaching_only: !self.recipe.protected
                || !self.recipe.stop_at_suspended
                || !self.recipe.sequential,
        }
    }

    /// Queued: one operation from joining the queue to the grant ([`Queued`](crate::attempt::Queued)), since
    /// the node holds the waiter's place between attempts.
    fn acquire_observed<'a>(&'a self, call: Acquire<'a>) -> Acquiring<'a> {
        Box::pin(crate::retry::acquire_queued(self, call, None))
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(self.attempt(lease))
    }
}
