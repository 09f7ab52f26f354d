//! `redis-del-unconditional` (teaching only): `SET key owner NX PX lease`, released by a
//! plain `DEL key`. A holder paused past its lease deletes the *next* holder's lock —
//! foreign release, then two holders.
//!
//! Commands: acquire `SET k o NX PX t`; release `DEL k` (1 deleted — whoever's it was —
//! 0 nothing there).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handle::KeyHandle;
use super::lua::{require_ttl, set_nx_px};
use super::node::{unexpected, RedisNode};
use crate::attempt::{Attempt, AttemptObserver};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = "redis-del-unconditional";

/// Teaching only: a handle whose release deletes the key whoever holds it.
#[derive(Clone, Debug)]
pub struct DelUnconditionalLock {
    handle: KeyHandle,
}

impl DelUnconditionalLock {
    /// A handle on `key` with a fresh owner (stored, but never checked).
    pub fn new(node: &RedisNode, key: &str) -> Self {
        DelUnconditionalLock {
            handle: KeyHandle::new(node, key),
        }
    }
}

/// A grant released by an unconditional `DEL`.
#[derive(Debug)]
pub(crate) struct DelHeld {
    pub(crate) handle: KeyHandle,
}

/// `DEL key`: `Ok` when something was deleted (not necessarily ours).
pub(crate) async fn del(handle: &KeyHandle) -> Result<(), LockError> {
    let command = RedisCommand::Del {
        key: handle.key.clone(),
    };
    let released = &handle.released;
    let reply = handle
        .node
        .exec_then(command.clone(), || released.notify_one())
        .await;
    match reply? {
        RedisReply::Integer(1) => Ok(()),
        RedisReply::Integer(0) => Err(LockError::NotHeld {
            key: handle.key.clone(),
        }),
        other => Err(unexpected(&command, &other)),
    }
}

impl HeldLock for DelHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(del(&self.handle))
    }
}

impl DistributedLock for DelUnconditionalLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            if matches!(lease, Lease::Watchdog(_)) {
                return Err(LockError::Unsupported {
                    protocol: PROTOCOL,
                    what: "a watchdog (it has no safe renewal)",
                });
            }
            let ttl = require_ttl(PROTOCOL, lease)?;
            let sent_at = Instant::now();
            if !set_nx_px(&self.handle, &self.handle.owner, ttl).await? {
                return Ok(Attempt::Busy { retry_after: None });
            }
            let held = Arc::new(DelHeld {
                handle: self.handle.clone(),
            });
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn acquire_observed<'a>(
        &'a self,
        wait: Duration,
        lease: Lease,
        observer: &'a dyn AttemptObserver,
    ) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        Box::pin(crate::retry::acquire_loop(
            self,
            wait,
            lease,
            Some(&self.handle.released),
            observer,
        ))
    }
}
