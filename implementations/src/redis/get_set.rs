//! `redis-get-set` (teaching only): `GET key`, and if it is empty `SET key owner
//! [PX lease]`. Check and set are two commands, so two clients can both see the key
//! empty and both "acquire": mutual exclusion is broken with no fault at all.
//!
//! Commands: acquire `GET k` (a value: busy) then `SET k o [PX t]`; release `DEL k`.

use locklab_models::registry::ScenarioId;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::{refuse_watchdog, DelHeld};
use super::node::{px, unexpected, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisGetSet.name();

/// Teaching only: check-then-set in two commands.
#[derive(Clone, Debug)]
pub struct GetSetLock {
    handle: KeyHandle,
    gap: Option<Duration>,
}

impl GetSetLock {
    /// A handle on `key` with a fresh owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        GetSetLock {
            handle: KeyHandle::new(node, key),
            gap: None,
        }
    }

    /// Fault injection: sleep this long between `GET` and `SET`, widening the window in
    /// which another client sees the key empty too.
    pub fn with_gap(mut self, gap: Duration) -> Self {
        self.gap = Some(gap);
        self
    }
}

impl DistributedLock for GetSetLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            refuse_watchdog(PROTOCOL, lease)?;
            let sent_at = Instant::now();
            let get = RedisCommand::Get {
                key: self.handle.key.clone(),
            };
            match self.handle.node.exec(get.clone()).await? {
                RedisReply::Nil => {}
                RedisReply::Bulk(_) => {
                    return Ok(Attempt::busy())
                }
                other => return Err(unexpected(&get, &other)),
            }
            if let Some(gap) = self.gap {
                tokio::time::sleep(gap).await;
            }
            let set = RedisCommand::Set {
                key: self.handle.key.clone(),
                value: self.handle.owner.clone(),
                nx: false,
                px: lease.ttl().map(px),
            };
            match self.handle.node.exec(set.clone()).await? {
                RedisReply::Ok => {}
                other => return Err(unexpected(&set, &other)),
            }
            let held = DelHeld::of(&self.handle);
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
