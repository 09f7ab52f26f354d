//! `redlock`: antirez's Redlock over N independent nodes.
//!
//! 1. Note the time, send `SET k o NX PX ttl` to every node at once, each bounded by the
//!    node's response timeout (keep it small next to the TTL).
//! 2. Granted when a majority said `OK` and the validity left,
//!    `ttl − elapsed − drift` (drift = 1 % of the TTL + 2 ms), is positive.
//! 3. Otherwise send the compare-and-delete to *every* node (a node that timed out may
//!    still have set the key) and fail; the acquire loop retries after a random delay,
//!    which de-synchronises competing clients.
//!
//! Release: compare-and-delete on every node. Renew: compare-and-pexpire on every node,
//! good when a majority renewed. No fencing token: Redlock cannot produce one, which is
//! why a client paused past its validity breaks it (`redlock-pause`).

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::handle::random_owner;
use super::key_commands::require_ttl;
use super::node::{px, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use crate::ownership::drift;
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::Redlock.name();

/// A Redlock handle over independent nodes.
#[derive(Clone, Debug)]
pub struct Redlock {
    nodes: Arc<[RedisNode]>,
    key: String,
    owner: String,
}

impl Redlock {
    /// A handle on `key` over `nodes` (an odd number, usually 5), with a fresh owner.
    pub fn new(nodes: &[RedisNode], key: &str) -> Result<Self, LockError> {
        if nodes.is_empty() {
            return Err(LockError::InvalidConfig(
                "Redlock needs at least one node".into(),
            ));
        }
        Ok(Redlock {
            nodes: nodes.to_vec().into(),
            key: key.to_string(),
            owner: random_owner(),
        })
    }

    /// Nodes needed for a grant: a strict majority.
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Sends `command` to every node at once; the replies (or errors) by node index.
    async fn broadcast(&self, command: RedisCommand) -> Vec<Result<RedisReply, LockError>> {
        broadcast(&self.nodes, command).await
    }
}

async fn broadcast(
    nodes: &[RedisNode],
    command: RedisCommand,
) -> Vec<Result<RedisReply, LockError>> {
    let mut set = JoinSet::new();
    for (i, node) in nodes.iter().enumerate() {
        let node = node.clone();
        let command = command.clone();
        set.spawn(async move { (i, node.exec(command).await) });
    }
    let mut out: Vec<Result<RedisReply, LockError>> = (0..nodes.len())
        .map(|_| Err(LockError::InvalidConfig("task lost".into())))
        .collect();
    while let Some(joined) = set.join_next().await {
        if let Ok((i, r)) = joined {
            out[i] = r;
        }
    }
    out
}

fn compare_and_delete(key: &str, owner: &str) -> RedisCommand {
    RedisCommand::EvalCompareAndDelete {
        key: key.to_string(),
        value: owner.to_string(),
    }
}

struct RedlockHeld {
    nodes: Arc<[RedisNode]>,
    key: String,
    owner: String,
    quorum: usize,
}

impl HeldLock for RedlockHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = compare_and_delete(&self.key, &self.owner);
            let replies = broadcast(&self.nodes, command).await;
            let freed = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Integer(1))))
                .count();
            if freed >= self.quorum {
                Ok(())
            } else {
                Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                })
            }
        })
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let command = RedisCommand::EvalCompareAndRenew {
                key: self.key.clone(),
                value: self.owner.clone(),
                px: px(lease),
            };
            let replies = broadcast(&self.nodes, command).await;
            let renewed = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Integer(1))))
                .count();
            let refused = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Integer(0))))
                .count();
            if renewed >= self.quorum {
                Ok(())
            } else if refused > self.nodes.len() - self.quorum {
                Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                })
            } else {
                Err(LockError::NoQuorum {
                    granted: renewed,
                    nodes: self.nodes.len(),
                    needed: self.quorum,
                    validity_ms: 0,
                })
            }
        })
    }
}

impl DistributedLock for Redlock {
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
            let ttl = require_ttl(PROTOCOL, lease)?;
            let start = Instant::now();
            let replies = self
                .broadcast(RedisCommand::Set {
                    key: self.key.clone(),
                    value: self.owner.clone(),
                    nx: true,
                    px: Some(px(ttl)),
                })
                .await;
            let granted = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Ok)))
                .count();
            let busy = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Nil)))
                .count();
            let elapsed = start.elapsed();
            let validity =
                ttl.as_millis() as i64 - elapsed.as_millis() as i64 - drift(ttl).as_millis() as i64;
            if granted >= self.quorum() && validity > 0 {
                let held = Arc::new(RedlockHeld {
                    nodes: self.nodes.clone(),
                    key: self.key.clone(),
                    owner: self.owner.clone(),
                    quorum: self.quorum(),
                });
                return Ok(Attempt::Acquired(LockGuard::new(
                    PROTOCOL, &self.key, None, held, lease, start,
                )));
            }
            // Undo everywhere, including nodes that did not answer: they may have set it.
            let _ = self
                .broadcast(compare_and_delete(&self.key, &self.owner))
                .await;
            if busy >= self.quorum() {
                return Ok(Attempt::busy());
            }
            Err(LockError::NoQuorum {
                granted,
                nodes: self.nodes.len(),
                needed: self.quorum(),
                validity_ms: validity,
            })
        })
    }
}
