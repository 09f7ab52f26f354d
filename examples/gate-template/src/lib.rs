//! Your lock. This one is the usual Redis lock, written as a team would write it:
//! `SET key owner NX PX lease` to take it, a compare-and-delete script to give it back
//! (only if the key still holds this handle's owner), a compare-and-renew to extend it.
//! Replace it with yours: anything that implements [`DistributedLock`] (and a
//! [`HeldLock`] for what a grant holds) can be gated.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::redis::{RedisCommand, RedisNode, RedisReply};
use locklab_implementations::{
    Attempt, BoxFuture, DistributedLock, HeldLock, Lease, LockError, LockGuard, LockInfo,
};

/// What reports call it.
pub const PROTOCOL: &str = "team-redis-lock";

static HANDLES: AtomicU64 = AtomicU64::new(0);

/// One handle on one lock: its own owner identity, as one application instance has.
#[derive(Clone, Debug)]
pub struct TeamLock {
    node: RedisNode,
    key: String,
    owner: String,
}

impl TeamLock {
    /// A handle on `key` at `node`, with an owner no other handle has.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        let n = HANDLES.fetch_add(1, Ordering::Relaxed);
        TeamLock {
            node: node.clone(),
            key: key.to_string(),
            owner: format!("{}-{n}", std::process::id()),
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl DistributedLock for TeamLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: false,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let Some(ttl) = lease.ttl() else {
                return Err(LockError::Unsupported {
                    protocol: PROTOCOL,
                    what: "a lock without a lease",
                });
            };
            let sent_at = Instant::now();
            let reply = self
                .node
                .exec(RedisCommand::Set {
                    key: self.key.clone(),
                    value: self.owner.clone(),
                    nx: true,
                    px: Some(ms(ttl)),
                })
                .await?;
            match reply {
                RedisReply::Ok => {
                    let held = Arc::new(Held(self.clone()));
                    Ok(Attempt::Acquired(LockGuard::new(
                        PROTOCOL,
                        self.key.clone(),
                        None,
                        held,
                        lease,
                        sent_at,
                    )))
                }
                RedisReply::Nil => Ok(Attempt::busy()),
                other => Err(LockError::UnexpectedReply {
                    command: "SET NX PX".into(),
                    reply: format!("{other:?}"),
                }),
            }
        })
    }
}

/// A grant: released and renewed only while the key still holds this owner.
struct Held(TeamLock);

impl Held {
    async fn only_if_mine(&self, command: RedisCommand) -> Result<(), LockError> {
        match self.0.node.exec(command).await? {
            RedisReply::Integer(1) => Ok(()),
            RedisReply::Integer(0) => Err(LockError::NotHeld {
                key: self.0.key.clone(),
                reason: None,
            }),
            other => Err(LockError::UnexpectedReply {
                command: "compare-and-delete/renew".into(),
                reply: format!("{other:?}"),
            }),
        }
    }
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.only_if_mine(RedisCommand::EvalCompareAndDelete {
            key: self.0.key.clone(),
            value: self.0.owner.clone(),
        }))
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.only_if_mine(RedisCommand::EvalCompareAndRenew {
            key: self.0.key.clone(),
            value: self.0.owner.clone(),
            px: ms(lease),
        }))
    }
}
