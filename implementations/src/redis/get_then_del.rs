//! `redis-get-then-del` (teaching only): `SET key owner NX PX lease`, released by
//! `GET key` and, if it still holds our owner, `DEL key`. The check is right but not
//! atomic: when the lease runs out between `GET` and `DEL` and someone else acquires,
//! our `DEL` removes *their* lock. [`GetThenDelLock::with_pause_before_del`] injects
//! that pause.
//!
//! Commands: acquire `SET k o NX PX t`; release `GET k` then (if equal) `DEL k`.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::{del, set_nx_px_owner};
use super::node::{unexpected, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisGetThenDel.name();

/// Teaching only: owner check and delete in two commands.
#[derive(Clone, Debug)]
pub struct GetThenDelLock {
    handle: KeyHandle,
    pause_before_del: Option<Duration>,
}

impl GetThenDelLock {
    /// A handle on `key` with a fresh owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        GetThenDelLock {
            handle: KeyHandle::new(node, key),
            pause_before_del: None,
        }
    }

    /// Fault injection: pause this long between the `GET` and the `DEL` of a release
    /// (a GC pause, a slow network).
    pub fn with_pause_before_del(mut self, pause: Duration) -> Self {
        self.pause_before_del = Some(pause);
        self
    }
}

struct GetThenDelHeld {
    handle: KeyHandle,
    pause: Option<Duration>,
}

impl HeldLock for GetThenDelHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let get = RedisCommand::Get {
                key: self.handle.key.clone(),
            };
            match self.handle.node.exec(get.clone()).await? {
                RedisReply::Bulk(v) if v == self.handle.owner => {}
                RedisReply::Bulk(_) | RedisReply::Nil => {
                    return Err(LockError::NotHeld {
                        key: self.handle.key.clone(),
                        reason: None,
                    })
                }
                other => return Err(unexpected(&get, &other)),
            }
            if let Some(p) = self.pause {
                tokio::time::sleep(p).await;
            }
            del(&self.handle).await
        })
    }
}

impl DistributedLock for GetThenDelLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        let held = || {
            Arc::new(GetThenDelHeld {
                handle: self.handle.clone(),
                pause: self.pause_before_del,
            })
        };
        Box::pin(set_nx_px_owner(&self.handle, PROTOCOL, lease, held))
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
