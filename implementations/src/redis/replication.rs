//! Waiting for replicas (`WAIT`) before the critical section starts.
//!
//! `WAIT n t` after a grant makes the lock survive the failover to a replica that has
//! it — but only to one of the `n` that acknowledged: with `n` smaller than the number
//! of replicas Sentinel may promote a lagging one (catalog: `redis-failover-wait`).

use std::time::Duration;

use super::handle::KeyHandle;
use super::node::{px, unexpected, RedisNode};
use crate::error::LockError;
use crate::guard::LockGuard;
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// Wait for `replicas` acknowledgements, at most `timeout`, after each grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitReplicas {
    /// How many replicas must have the grant.
    pub replicas: u32,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// Sends `WAIT`; `Ok` when enough replicas acknowledged, [`LockError::NotReplicated`]
/// otherwise (the caller then releases the grant).
pub async fn confirm(node: &RedisNode, wait: WaitReplicas) -> Result<(), LockError> {
    let command = RedisCommand::Wait {
        numreplicas: wait.replicas,
        timeout: px(wait.timeout),
    };
    let reply = node.exec(command.clone()).await?;
    match reply {
        RedisReply::Integer(n) if n >= i64::from(wait.replicas) => Ok(()),
        RedisReply::Integer(n) => Err(LockError::NotReplicated {
            acked: n,
            wanted: i64::from(wait.replicas),
        }),
        other => Err(unexpected(&command, &other)),
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
