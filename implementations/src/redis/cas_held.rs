//! A grant held by a unique value in a plain key, shared by every lock that stores one:
//! released by a Lua compare-and-delete, renewed by a Lua compare-and-pexpire — or, for
//! `redis-lua` with local hand-off, released by passing the key to the first task of
//! this process queued behind it (see [`super::handoff`]), with one server command,
//! `EVAL compare-and-transfer` (1 handed over, 0 the holder no longer had it). The pass
//! makes a grant of the same kind for the next owner, so it lives here with the grant.
//!
//! **Pipelined pass.** The command moves the key from the holder's value to the next
//! owner's with the next owner's lease, atomically, so the key is never free in between
//! and nobody outside the process can slip in. The next owner therefore does not have
//! to wait for the reply: from the moment the command is on the connection, the key
//! holds the holder's value or the next owner's until at least the holder's confirmed
//! validity, so the next owner starts at once with *that* validity, and the reply
//! extends it to its own lease (counted from when the command left, as for `SET NX`) or,
//! if the server says 0, marks it lost. Passes queue up on one connection in order, so a
//! pass by the next owner never overtakes the pass to it. A holder whose validity is
//! nearly spent (less than half the next lease left, or lost) waits for the reply first
//! and hands over only a confirmed grant.
//!
//! This is lock cohorting (Dice, Marathe, Shavit) with the server still told of every
//! owner: a hand-off costs one command and no round trip on the critical path, where
//! release-then-`SET NX` costs two commands, one round trip, and the doomed `SET NX`es of
//! the other waiters. The releaser's `release` still returns what compare-and-delete
//! would have: released, or `NotHeld`.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::handle::KeyHandle;
use super::local_queue::{LocalQueue, Waiting};
use super::node::{px, unexpected};
use super::replication::{confirm, WaitReplicas};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::handoff_queue::{HandOff, Handing};
use crate::held_lock::HeldLock;
use crate::ownership::{valid_until, LostReason, Ownership};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The ownership record of a grant, set once its guard exists: a pass inherits its
/// validity.
type OwnershipSlot = OnceLock<Arc<Ownership>>;

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
        let command = RedisCommand::EvalCompareAndDelete {
            key: self.handle.key.clone(),
            value: self.handle.owner.clone(),
        };
        self.handle.release_by(command).await
    }
}

impl HeldLock for CasHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.release_now())
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = RedisCommand::EvalCompareAndRenew {
                key: self.handle.key.clone(),
                value: self.handle.owner.clone(),
                px: px(lease),
            };
            let reply = self.handle.node.exec(command.clone()).await?;
            self.handle.done_if_one(&command, reply)
        })
    }
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

/// Releases `holder`'s grant by handing the key to `next`.
async fn hand_over(
    holder: &KeyHandle,
    holder_ownership: &OwnershipSlot,
    queue: &Arc<LocalQueue>,
    handing: Handing<Waiting, LockGuard>,
    next: Waiting,
) -> Result<(), LockError> {
    // A node keeps one queue per key, so whoever queued here is on the holder's node and
    // key and shares its wake-up: only the owner differs.
    let next_handle = KeyHandle {
        node: holder.node.clone(),
        key: holder.key.clone(),
        owner: next.owner,
        released: holder.released.clone(),
    };
    let command = RedisCommand::EvalCompareAndTransfer {
        key: holder.key.clone(),
        value: holder.owner.clone(),
        to: next_handle.owner.clone(),
        px: px(next.ttl),
    };
    let inherited = holder_ownership
        .get()
        .filter(|o| !o.is_lost())
        .and_then(|o| o.valid_until())
        .filter(|v| v.saturating_duration_since(Instant::now()) >= next.ttl / 2);
    let sent_at = Instant::now();
    let held = Arc::new(CasHeld::handing_over(next_handle.clone(), queue.clone()));
    let (protocol, lease, ttl) = (next.protocol, next.lease, next.ttl);
    let key = next_handle.key;
    let reply = match inherited {
        Some(validity) => {
            let mut passed = None;
            let reply = holder
                .node
                .exec_in_order_then(command.clone(), || {
                    let guard = LockGuard::with_validity(
                        protocol,
                        key.clone(),
                        held.clone(),
                        lease,
                        validity,
                    );
                    held.set_ownership(guard.ownership());
                    passed = Some(guard.ownership());
                    // A waiter that has gone hands the guard back; dropping it releases
                    // it, in order behind this command on the same connection.
                    drop(handing.deliver(HandOff::Granted(guard)));
                })
                .await;
            let ownership = passed.ok_or_else(|| LockError::Backend("pass not sent".into()))?;
            match reply {
                Ok(RedisReply::Integer(1)) => {
                    ownership.extend(valid_until(sent_at, ttl));
                    return Ok(());
                }
                Ok(RedisReply::Integer(0)) => ownership.mark_lost(LostReason::Refused),
                // Unknown outcome: the inherited validity still bounds the pass.
                _ => {}
            }
            reply
        }
        None => {
            let reply = holder.node.exec(command.clone()).await;
            if let Ok(RedisReply::Integer(1)) = reply {
                let key = &held.handle().key;
                let guard = LockGuard::new(protocol, key, None, held.clone(), lease, sent_at);
                held.set_ownership(guard.ownership());
                drop(handing.deliver(HandOff::Granted(guard)));
                return Ok(());
            }
            drop(handing.deliver(HandOff::Retry));
            reply
        }
    };
    // The waiter is the local owner now: told to retry, or holding a pass marked lost.
    match reply? {
        RedisReply::Integer(0) => Err(LockError::NotHeld { key, reason: None }),
        other => Err(unexpected(&command, &other)),
    }
}
