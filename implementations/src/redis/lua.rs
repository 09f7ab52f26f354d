//! `redis-lua`: `SET key owner NX PX lease`, released by a Lua compare-and-delete and
//! renewed by a Lua compare-and-pexpire. The reference single-node lock: correct as long
//! as the holder finishes within its lease (or a watchdog keeps renewing), and the node
//! neither fails over nor loses data.
//!
//! Commands: acquire `SET k o NX PX t` (`OK` granted, nil busy); release
//! `EVAL compare-and-delete` (1 released, 0 not held); renew `EVAL compare-and-pexpire`
//! (1 renewed, 0 not held); with [`WaitReplicas`], `WAIT n t` after each grant.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::command::{RedisCommand, RedisReply};
use super::handle::KeyHandle;
use super::node::{unexpected, RedisNode};
use super::replication::{confirm, WaitReplicas};
use super::scripts::LockScript;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lock::{Attempt, BoxFuture, DistributedLock, Lease, LockInfo};

/// The catalog id.
pub const PROTOCOL: &str = "redis-lua";

/// A handle on a `redis-lua` lock.
#[derive(Clone, Debug)]
pub struct LuaLock {
    handle: KeyHandle,
    wait_replicas: Option<WaitReplicas>,
}

impl LuaLock {
    /// A handle on `key` with a fresh random owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        LuaLock {
            handle: KeyHandle::new(node, key),
            wait_replicas: None,
        }
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
    pub(crate) handle: KeyHandle,
}

impl CasHeld {
    pub(crate) async fn release_now(&self) -> Result<(), LockError> {
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
            let held = Arc::new(CasHeld {
                handle: self.handle.clone(),
            });
            after_grant(&held, self.wait_replicas).await?;
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn acquire(&self, wait: Duration, lease: Lease) -> BoxFuture<'_, Result<LockGuard, LockError>> {
        Box::pin(crate::retry::acquire_loop(
            self,
            wait,
            lease,
            Some(&self.handle.released),
        ))
    }
}
