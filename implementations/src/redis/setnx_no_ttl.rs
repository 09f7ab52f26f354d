//! `redis-setnx-no-ttl` (teaching only): `SETNX key owner`, released by `DEL key`.
//! Mutual exclusion holds, but a holder that crashes never releases: every later
//! acquire waits forever (a liveness failure, not a safety one).
//!
//! Commands: acquire `SETNX k o` (1 granted, 0 busy); release `DEL k`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::del_unconditional::DelHeld;
use super::handle::KeyHandle;
use super::node::{unexpected, RedisNode};
use crate::attempt::{Attempt, AttemptObserver};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = "redis-setnx-no-ttl";

/// Teaching only: a lock without lease.
#[derive(Clone, Debug)]
pub struct SetNxNoTtlLock {
    handle: KeyHandle,
}

impl SetNxNoTtlLock {
    /// A handle on `key` with a fresh owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        SetNxNoTtlLock {
            handle: KeyHandle::new(node, key),
        }
    }
}

/// `SETNX key value`: `Ok(true)` granted.
pub(crate) async fn setnx(handle: &KeyHandle) -> Result<bool, LockError> {
    let command = RedisCommand::SetNx {
        key: handle.key.clone(),
        value: handle.owner.clone(),
    };
    match handle.node.exec(command.clone()).await? {
        RedisReply::Integer(1) => Ok(true),
        RedisReply::Integer(0) => Ok(false),
        other => Err(unexpected(&command, &other)),
    }
}

impl DistributedLock for SetNxNoTtlLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            if lease != Lease::Unbounded {
                return Err(LockError::Unsupported {
                    protocol: PROTOCOL,
                    what: "a lease (this lock has no TTL)",
                });
            }
            let sent_at = Instant::now();
            if !setnx(&self.handle).await? {
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
