//! `redis-lua`: `SET key owner NX PX lease`, released by a Lua compare-and-delete and
//! renewed by a Lua compare-and-pexpire. The reference single-node lock: correct as long
//! as the holder finishes within its lease (or a watchdog keeps renewing), and the node
//! neither fails over nor loses data.
//!
//! Commands: acquire `SET k o NX PX t` (`OK` granted, nil busy); release
//! `EVAL compare-and-delete` (1 released, 0 not held); renew `EVAL compare-and-pexpire`
//! (1 renewed, 0 not held); with [`WaitReplicas`], `WAIT n t` after each grant.
//!
//! **Local hand-off** (opt-in, [`LuaLock::with_handoff`]; the plain constructor is
//! exactly the protocol the `redis-lua` model explores): handles
//! of one [`RedisNode`] — tasks of one process — queue behind the one of them that
//! holds or is trying to get the key, and the holder's release becomes
//! `EVAL compare-and-transfer` to the first in line (see [`super::handoff`]). Queued
//! tasks do not poll the server, except every [`super::handoff::MAX_QUEUED_WAIT`] in
//! case the holder crashed. Tasks of one process are served first come, first served;
//! clients of *other* processes are not queued and get no fairness guarantee, as with
//! any polling lock: a busy process can keep the key for as long as it has waiters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::command::{RedisCommand, RedisReply};
use super::handle::KeyHandle;
use super::handoff::{hand_over, replicated, wait_turn, LocalQueue, OwnershipSlot};
use super::node::{unexpected, RedisNode};
use super::replication::{confirm, WaitReplicas};
use super::scripts::LockScript;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lock::{Attempt, AttemptObserver, BoxFuture, DistributedLock, Lease, LockInfo};
use crate::ownership::Ownership;
use crate::retry::{LocalTurns, Waited};

/// The catalog id.
pub const PROTOCOL: &str = "redis-lua";

/// A handle on a `redis-lua` lock.
#[derive(Clone, Debug)]
pub struct LuaLock {
    handle: KeyHandle,
    wait_replicas: Option<WaitReplicas>,
    queue: Option<Arc<LocalQueue>>,
}

impl LuaLock {
    /// A handle on `key` with a fresh random owner: the plain protocol, release always
    /// compare-and-delete and waiters polling the server (with a local wake-up on
    /// release).
    pub fn new(node: &RedisNode, key: &str) -> Self {
        LuaLock {
            handle: KeyHandle::new(node, key),
            wait_replicas: None,
            queue: None,
        }
    }

    /// Hands over locally (see the module doc): tasks of one process queue behind the
    /// local owner, and a release with someone queued transfers the key in one command.
    /// No model explores this protocol; its tests are the real-server ones.
    pub fn with_handoff(mut self) -> Self {
        self.queue = Some(self.handle.node.local_queue(&self.handle.key));
        self
    }

    /// Waits for replicas after each grant; a grant not acknowledged in time is
    /// released and counts as a failed attempt.
    pub fn wait_for_replicas(mut self, wait: WaitReplicas) -> Self {
        self.wait_replicas = Some(wait);
        self
    }

    /// The owner value stored in the key.
    pub fn owner(&self) -> &str {
        &self.handle.owner
    }
}

/// A grant whose key holds `owner`: released and renewed by compare-and-* scripts.
/// Shared by every lock that stores a unique value in a plain key.
#[derive(Debug)]
pub(crate) struct CasHeld {
    handle: KeyHandle,
    /// Where local waiters queue (`redis-lua` with hand-off only).
    queue: Option<Arc<LocalQueue>>,
    /// The guard's ownership record, which a hand-off passes on.
    ownership: OwnershipSlot,
}

impl CasHeld {
    /// A grant released by compare-and-delete only.
    pub(crate) fn new(handle: KeyHandle) -> Self {
        CasHeld {
            handle,
            queue: None,
            ownership: OwnershipSlot::new(),
        }
    }

    /// A grant whose release hands the key to the first waiter in `queue`.
    pub(crate) fn handing_over(handle: KeyHandle, queue: Arc<LocalQueue>) -> Self {
        CasHeld {
            handle,
            queue: Some(queue),
            ownership: OwnershipSlot::new(),
        }
    }

    /// The handle the grant belongs to.
    pub(crate) fn handle(&self) -> &KeyHandle {
        &self.handle
    }

    /// Records the guard's ownership (once, right after the guard is made).
    pub(crate) fn set_ownership(&self, ownership: Arc<Ownership>) {
        let _ = self.ownership.set(ownership);
    }

    pub(crate) async fn release_now(&self) -> Result<(), LockError> {
        if let Some(queue) = &self.queue {
            if let Some((handing, next)) = queue.next_owner(&self.handle.owner) {
                return hand_over(&self.handle, &self.ownership, queue, handing, next).await;
            }
        }
        let command = RedisCommand::Eval {
            script: LockScript::CompareAndDelete,
            keys: vec![self.handle.key.clone()],
            args: vec![self.handle.owner.clone()],
        };
        let released = &self.handle.released;
        let reply = self
            .handle
            .node
            .exec_then(command.clone(), || released.notify_one())
            .await;
        match reply? {
            RedisReply::Int(1) => Ok(()),
            RedisReply::Int(0) => Err(LockError::NotHeld {
                key: self.handle.key.clone(),
            }),
            other => Err(unexpected(&command, &other)),
        }
    }
}

impl HeldLock for CasHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.release_now())
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = RedisCommand::Eval {
                script: LockScript::CompareAndPexpire,
                keys: vec![self.handle.key.clone()],
                args: vec![
                    self.handle.owner.clone(),
                    RedisCommand::px(lease).to_string(),
                ],
            };
            match self.handle.node.exec(command.clone()).await? {
                RedisReply::Int(1) => Ok(()),
                RedisReply::Int(0) => Err(LockError::NotHeld {
                    key: self.handle.key.clone(),
                }),
                other => Err(unexpected(&command, &other)),
            }
        })
    }
}

/// `SET key value NX PX ttl`: `Ok(true)` granted, `Ok(false)` busy.
pub(crate) async fn set_nx_px(
    handle: &KeyHandle,
    value: &str,
    ttl: Duration,
) -> Result<bool, LockError> {
    let command = RedisCommand::Set {
        key: handle.key.clone(),
        value: value.to_string(),
        nx: true,
        px: Some(RedisCommand::px(ttl)),
    };
    match handle.node.exec(command.clone()).await? {
        RedisReply::Ok => Ok(true),
        RedisReply::Nil => Ok(false),
        other => Err(unexpected(&command, &other)),
    }
}

/// The lease's TTL, or `Unsupported` for a lock that must have one.
pub(crate) fn require_ttl(protocol: &'static str, lease: Lease) -> Result<Duration, LockError> {
    lease.ttl().ok_or(LockError::Unsupported {
        protocol,
        what: "a lease without TTL",
    })
}

/// After a grant: `WAIT` if configured, releasing the grant when too few replicas have it.
pub(crate) async fn after_grant(
    held: &CasHeld,
    wait: Option<WaitReplicas>,
) -> Result<(), LockError> {
    let Some(wait) = wait else { return Ok(()) };
    if let Err(e) = confirm(&held.handle.node, wait).await {
        let _ = held.release_now().await;
        return Err(e);
    }
    Ok(())
}

impl DistributedLock for LuaLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, false)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = require_ttl(PROTOCOL, lease)?;
            let sent_at = Instant::now();
            if !set_nx_px(&self.handle, &self.handle.owner, ttl).await? {
                return Ok(Attempt::Busy { retry_after: None });
            }
            let Some(queue) = &self.queue else {
                let held = Arc::new(CasHeld::new(self.handle.clone()));
                after_grant(&held, self.wait_replicas).await?;
                return Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at));
            };
            queue.held_by(&self.handle.owner);
            let held = Arc::new(CasHeld::handing_over(self.handle.clone(), queue.clone()));
            let guard = self
                .handle
                .granted_guard(PROTOCOL, None, held.clone(), lease, sent_at);
            held.set_ownership(guard.ownership());
            let guard = replicated(guard, &self.handle, self.wait_replicas).await?;
            Ok(Attempt::Acquired(guard))
        })
    }

    fn acquire_observed<'a>(
        &'a self,
        wait: Duration,
        lease: Lease,
        observer: &'a dyn AttemptObserver,
    ) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        let turns = self.queue.as_ref().map(|_| self as &dyn LocalTurns);
        Box::pin(crate::retry::acquire_loop_with(
            self,
            wait,
            lease,
            Some(&self.handle.released),
            turns,
            observer,
        ))
    }
}

impl LocalTurns for LuaLock {
    fn local_holder(&self) -> bool {
        self.queue
            .as_ref()
            .and_then(|q| q.holder())
            .is_some_and(|h| h != self.handle.owner)
    }

    fn wait_turn(&self, lease: Lease, deadline: Instant) -> BoxFuture<'_, Waited> {
        Box::pin(async move {
            let Some(queue) = &self.queue else {
                return Waited::AskServer;
            };
            wait_turn(&self.handle, queue, lease, deadline, self.wait_replicas).await
        })
    }

    fn give_up(&self) {
        if let Some(q) = &self.queue {
            q.give_up(&self.handle.owner);
        }
    }
}
