//! `redis-lua-fenced`: the Lua lock whose grant also issues a fencing token — `SET NX PX`
//! and `INCR` of a counter in one script, so a token exists exactly for each grant and
//! tokens strictly increase in grant order. The protected resource must refuse a write
//! carrying a token older than one it has accepted; then even a holder paused past its
//! lease cannot corrupt it (Kleppmann's fix).
//!
//! Commands: acquire `EVAL fenced-acquire [key, key:fence] [owner, ms]` (token ≥ 1
//! granted, negative busy); release and renew as `redis-lua`.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::cas_held::{after_grant, CasHeld};
use super::handle::KeyHandle;
use super::key_commands::require_ttl;
use super::node::{px, unexpected, RedisNode};
use super::replication::WaitReplicas;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisLuaFenced.name();

/// A handle on a fenced lock.
#[derive(Clone, Debug)]
pub struct FencedLock {
    handle: KeyHandle,
    wait_replicas: Option<WaitReplicas>,
}

impl FencedLock {
    /// A handle on `key` with a fresh owner; tokens count in `key:fence`.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        FencedLock {
            handle: KeyHandle::new(node, key),
            wait_replicas: None,
        }
    }

    /// Waits for replicas after each grant (see [`WaitReplicas`]).
    pub fn wait_for_replicas(mut self, wait: WaitReplicas) -> Self {
        self.wait_replicas = Some(wait);
        self
    }

    /// The key of the token counter.
    pub fn fence_key(&self) -> String {
        format!("{}:fence", self.handle.key)
    }
}

impl DistributedLock for FencedLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, true, false)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = require_ttl(PROTOCOL, lease)?;
            let command = RedisCommand::EvalFencedAcquire {
                key: self.handle.key.clone(),
                fence: self.fence_key(),
                value: self.handle.owner.clone(),
                px: px(ttl),
            };
            let sent_at = Instant::now();
            let token = match self.handle.node.exec(command.clone()).await? {
                RedisReply::Integer(t) if t >= 1 => t.unsigned_abs(),
                RedisReply::Integer(t) => {
                    let pttl = (-1 - t).max(0).unsigned_abs();
                    return Ok(Attempt::Busy {
                        retry_after: Some(Duration::from_millis(pttl)),
                        reason: None,
                    });
                }
                other => return Err(unexpected(&command, &other)),
            };
            let held = Arc::new(CasHeld::new(self.handle.clone()));
            after_grant(&held, self.wait_replicas).await?;
            Ok(self
                .handle
                .granted(PROTOCOL, Some(token), held, lease, sent_at))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
