//! `redis-reentrant`: Redisson's `RLock` — a hash `key → {owner: count}` taken and
//! re-entered by one script, released one hold at a time, and kept alive by a watchdog
//! that renews every lease/3 while the handle holds it.
//!
//! Commands: acquire `EVAL hash-acquire [key] [ms, owner]` (nil granted or re-entered,
//! integer = the holder's PTTL, busy); release `EVAL hash-release [key] [ms, owner]`
//! (0 one hold given back, 1 freed, nil not held); renew `EVAL hash-renew [key]
//! [ms, owner]` (1 renewed, 0 not held). Redisson also `PUBLISH`es on unlock to wake
//! waiters in other processes; here only local waiters are woken (others poll with
//! backoff capped by the returned PTTL), which changes no command the spec sees.
//!
//! The owner is the handle: re-acquiring on the same handle re-enters, other handles
//! wait. [`ReentrantLock::with_thread_id_owner`] reproduces the teaching bug
//! `redis-reentrant-thread-id` (owner = a bare thread id shared across processes).

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::require_ttl;
use super::node::{px, unexpected, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::held_lock::HeldLock;
use crate::hold_cell::HoldCell;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisReentrant.name();
/// The catalog id of the thread-id-only owner variant (teaching only).
pub const PROTOCOL_THREAD_ID: &str = ScenarioId::RedisReentrantThreadId.name();

/// Redisson's default watchdog lease.
pub const DEFAULT_WATCHDOG_LEASE: Duration = Duration::from_secs(30);

/// A handle (= one owner) on a reentrant hash lock. Clones share the owner and the hold
/// count: they are the *same* owner to the lock.
#[derive(Clone, Debug)]
pub struct ReentrantLock {
    handle: KeyHandle,
    cell: Arc<HoldCell>,
    protocol: &'static str,
}

impl ReentrantLock {
    /// A handle on `key` owned by a fresh random identity.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        ReentrantLock {
            handle: KeyHandle::new(node, key),
            cell: HoldCell::new(),
            protocol: PROTOCOL,
        }
    }

    /// Teaching only: the owner is the bare `thread_id`, as when the per-client UUID is
    /// left out. Two processes whose threads share an id are then one owner — each can
    /// release or re-enter the other's lock.
    pub fn with_thread_id_owner(node: &RedisNode, key: &str, thread_id: u64) -> Self {
        ReentrantLock {
            handle: KeyHandle::with_owner(node, key, thread_id.to_string()),
            cell: HoldCell::new(),
            protocol: PROTOCOL_THREAD_ID,
        }
    }

    /// Holds this handle counts (client side; the server counts the same).
    pub fn holds(&self) -> u32 {
        self.cell.holds()
    }

    /// The owner field in the hash.
    pub fn owner(&self) -> &str {
        &self.handle.owner
    }
}

struct HashHeld {
    handle: KeyHandle,
    lease_ms: u64,
}

impl HeldLock for HashHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = RedisCommand::EvalRedissonUnlock {
                key: self.handle.key.clone(),
                field: self.handle.owner.clone(),
                px: self.lease_ms,
            };
            let reply = self.handle.node.exec(command.clone()).await?;
            match reply {
                RedisReply::Integer(1) => {
                    self.handle.released.notify_one();
                    Ok(())
                }
                RedisReply::Integer(0) => Ok(()),
                RedisReply::Nil => Err(self.handle.not_held()),
                other => Err(unexpected(&command, &other)),
            }
        })
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = RedisCommand::EvalRedissonRenew {
                key: self.handle.key.clone(),
                field: self.handle.owner.clone(),
                px: px(lease),
            };
            let reply = self.handle.node.exec(command.clone()).await?;
            self.handle.done_if_one(&command, reply)
        })
    }
}

impl DistributedLock for ReentrantLock {
    fn info(&self) -> LockInfo {
        self.handle.info(
            self.protocol,
            true,
            false,
            self.protocol == PROTOCOL_THREAD_ID,
        )
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = require_ttl(self.protocol, lease)?;
            let lease_ms = px(ttl);
            let command = RedisCommand::EvalRedissonLock {
                key: self.handle.key.clone(),
                field: self.handle.owner.clone(),
                px: lease_ms,
            };
            let sent_at = Instant::now();
            match self.handle.node.exec(command.clone()).await? {
                RedisReply::Nil => {}
                RedisReply::Integer(pttl) => {
                    return Ok(Attempt::Busy {
                        retry_after: u64::try_from(pttl).ok().map(Duration::from_millis),
                        reason: None,
                    })
                }
                other => return Err(unexpected(&command, &other)),
            }
            let held = Arc::new(HashHeld {
                handle: self.handle.clone(),
                lease_ms,
            });
            Ok(Attempt::Acquired(LockGuard::in_cell(
                self.protocol,
                &self.handle.key,
                None,
                held,
                lease,
                sent_at,
                self.cell.clone(),
            )))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
