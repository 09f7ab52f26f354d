//! `redis-setnx-no-ttl` (teaching only): `SETNX key owner`, released by `DEL key`.
//! Mutual exclusion holds, but a holder that crashes never releases: every later
//! acquire waits forever (a liveness failure, not a safety one).
//!
//! Commands: acquire `SETNX k o` (1 granted, 0 busy); release `DEL k`.

use locklab_models::registry::ScenarioId;
use std::time::Instant;

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::{setnx, DelHeld};
use super::node::RedisNode;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisSetnxNoTtl.name();

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
                return Ok(Attempt::busy());
            }
            let held = DelHeld::of(&self.handle);
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
