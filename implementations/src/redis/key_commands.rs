//! The one-command steps on a lock key that several protocols share: the conditional
//! `SET … NX PX` and `SETNX` of an acquire, the plain `DEL` of a release (and the grant
//! it releases, [`DelHeld`]), and the lease checks of the locks that need a TTL and have
//! no safe renewal. Each protocol's module says which steps it strings together; what
//! one protocol alone sends stays in its module.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handle::KeyHandle;
use super::node::{px, unexpected};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use locklab_models::redis::spec::{RedisCommand, RedisReply};

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
        px: Some(px(ttl)),
    };
    match handle.node.exec(command.clone()).await? {
        RedisReply::Ok => Ok(true),
        RedisReply::Nil => Ok(false),
        other => Err(unexpected(&command, &other)),
    }
}

/// `SETNX key owner`: `Ok(true)` granted, `Ok(false)` busy.
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

/// One attempt of a lock that takes its key with `SET key owner NX PX ttl` for a fixed
/// lease: granted, and held by what `held` makes of the grant, or busy.
pub(crate) async fn set_nx_px_owner<H: HeldLock + 'static>(
    handle: &KeyHandle,
    protocol: &'static str,
    lease: Lease,
    held: impl FnOnce() -> Arc<H>,
) -> Result<Attempt, LockError> {
    let ttl = fixed_ttl(protocol, lease)?;
    let sent_at = Instant::now();
    if !set_nx_px(handle, &handle.owner, ttl).await? {
        return Ok(Attempt::busy());
    }
    Ok(handle.granted(protocol, None, held(), lease, sent_at))
}

/// `DEL key`: `Ok` when something was deleted (not necessarily ours), `NotHeld` when
/// nothing was there. Wakes this process's waiters on the key once the reply is in.
pub(crate) async fn del(handle: &KeyHandle) -> Result<(), LockError> {
    let command = RedisCommand::Del {
        key: handle.key.clone(),
    };
    handle.release_by(command).await
}

/// A grant released by an unconditional [`del`].
#[derive(Debug)]
pub(crate) struct DelHeld {
    handle: KeyHandle,
}

impl DelHeld {
    /// The grant of `handle`'s key, to release by `DEL`.
    pub(crate) fn of(handle: &KeyHandle) -> Arc<DelHeld> {
        Arc::new(DelHeld {
            handle: handle.clone(),
        })
    }
}

impl HeldLock for DelHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(del(&self.handle))
    }
}

/// The lease's TTL, or `Unsupported` for a lock that must have one.
pub(crate) fn require_ttl(protocol: &'static str, lease: Lease) -> Result<Duration, LockError> {
    lease.ttl().ok_or(LockError::Unsupported {
        protocol,
        what: "a lease without TTL",
    })
}

/// The TTL of a lease that has one and is not renewed by a watchdog: what the teaching
/// locks with a TTL take ([`require_ttl`] and [`refuse_watchdog`]).
pub(crate) fn fixed_ttl(protocol: &'static str, lease: Lease) -> Result<Duration, LockError> {
    refuse_watchdog(protocol, lease)?;
    require_ttl(protocol, lease)
}

/// `Unsupported` for a watchdog lease: the teaching locks have no owner-checked
/// renewal, so a watchdog would keep alive a key that may no longer be theirs.
pub(crate) fn refuse_watchdog(protocol: &'static str, lease: Lease) -> Result<(), LockError> {
    match lease {
        Lease::Watchdog(_) => Err(LockError::Unsupported {
            protocol,
            what: "a watchdog (it has no safe renewal)",
        }),
        _ => Ok(()),
    }
}
