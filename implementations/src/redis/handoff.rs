//! The local hand-off of `redis-lua`: how a holder passes the key to a task of the same
//! process that queued behind it ([`crate::handoff_queue`]), with one server command,
//! `EVAL compare-and-transfer` (1 handed over, 0 the holder no longer had it).
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

use super::command::{RedisCommand, RedisReply};
use super::handle::KeyHandle;
use super::lua::{CasHeld, PROTOCOL};
use super::node::unexpected;
use super::replication::{confirm, WaitReplicas};
use super::scripts::LockScript;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::handoff_queue::{HandOff, HandOffQueue, Handing};
use crate::lock::Lease;
use crate::ownership::{valid_until, LostReason, Ownership};
use crate::retry::Waited;

/// How long a queued waiter trusts the local holder before asking the server again
/// (the holder may have crashed, or kept the key past its lease).
pub const MAX_QUEUED_WAIT: Duration = Duration::from_millis(50);

/// The hand-off queue of one key on one node: waiters behind the local holder.
pub type LocalQueue = HandOffQueue<Waiting, LockGuard>;

/// What the holder needs to hand the key to a queued waiter.
#[derive(Debug)]
pub struct Waiting {
    handle: KeyHandle,
    lease: Lease,
    ttl: Duration,
}

/// The ownership record of a grant, set once its guard exists: a pass inherits its
/// validity.
pub(crate) type OwnershipSlot = OnceLock<Arc<Ownership>>;

/// Releases `holder`'s grant by handing the key to `next`.
pub(crate) async fn hand_over(
    holder: &KeyHandle,
    holder_ownership: &OwnershipSlot,
    queue: &Arc<LocalQueue>,
    handing: Handing<Waiting, LockGuard>,
    next: Waiting,
) -> Result<(), LockError> {
    let command = RedisCommand::Eval {
        script: LockScript::CompareAndTransfer,
        keys: vec![holder.key.clone()],
        args: vec![
            holder.owner.clone(),
            next.handle.owner.clone(),
            RedisCommand::px(next.ttl).to_string(),
        ],
    };
    let inherited = holder_ownership
        .get()
        .filter(|o| !o.is_lost())
        .and_then(|o| o.valid_until())
        .filter(|v| v.saturating_duration_since(Instant::now()) >= next.ttl / 2);
    let sent_at = Instant::now();
    let held = Arc::new(CasHeld::handing_over(next.handle.clone(), queue.clone()));
    let (lease, ttl) = (next.lease, next.ttl);
    let key = next.handle.key;
    let reply = match inherited {
        Some(validity) => {
            let mut passed = None;
            let reply = holder
                .node
                .exec_in_order_then(command.clone(), || {
                    let guard = LockGuard::with_validity(
                        PROTOCOL,
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
                Ok(RedisReply::Int(1)) => {
                    ownership.extend(valid_until(sent_at, ttl));
                    return Ok(());
                }
                Ok(RedisReply::Int(0)) => ownership.mark_lost(LostReason::Refused),
                // Unknown outcome: the inherited validity still bounds the pass.
                _ => {}
            }
            reply
        }
        None => {
            let reply = holder.node.exec(command.clone()).await;
            if let Ok(RedisReply::Int(1)) = reply {
                let guard =
                    held.handle()
                        .granted_guard(PROTOCOL, None, held.clone(), lease, sent_at);
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
        RedisReply::Int(0) => Err(LockError::NotHeld { key }),
        other => Err(unexpected(&command, &other)),
    }
}

/// Queues `handle` behind the local owner of its key, if there is one (otherwise it
/// becomes the local owner and must ask the server), and waits for the hand-off at most
/// [`MAX_QUEUED_WAIT`] (and not past `deadline`).
pub(crate) async fn wait_turn(
    handle: &KeyHandle,
    queue: &Arc<LocalQueue>,
    lease: Lease,
    deadline: Instant,
    wait_replicas: Option<WaitReplicas>,
) -> Waited {
    let Some(ttl) = lease.ttl() else {
        return Waited::AskServer;
    };
    let waiting = Waiting {
        handle: handle.clone(),
        lease,
        ttl,
    };
    let Some(ticket) = queue.claim(&handle.owner, waiting) else {
        return Waited::AskServer;
    };
    let patience = deadline.min(Instant::now() + MAX_QUEUED_WAIT);
    let outcome = tokio::select! {
        o = ticket.turn() => o,
        _ = tokio::time::sleep_until(patience.into()) => match ticket.withdraw() {
            Ok(()) => return Waited::AskServer,
            // Picked while the timer fired: the hand-off is on its way.
            Err(ticket) => ticket.turn().await,
        },
    };
    let HandOff::Granted(guard) = outcome else {
        return Waited::AskServer;
    };
    match replicated(guard, handle, wait_replicas).await {
        Ok(g) => Waited::Granted(g),
        Err(e) => Waited::Failed(e),
    }
}

/// With [`WaitReplicas`], `WAIT` after a grant; a grant too few replicas have is
/// released (which passes it on) and the attempt fails.
pub(crate) async fn replicated(
    guard: LockGuard,
    handle: &KeyHandle,
    wait_replicas: Option<WaitReplicas>,
) -> Result<LockGuard, LockError> {
    if let Some(wait) = wait_replicas {
        if let Err(e) = confirm(&handle.node, wait).await {
            let _ = guard.release().await;
            return Err(e);
        }
    }
    Ok(guard)
}
