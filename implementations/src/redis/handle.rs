//! What every single-node Redis lock handle holds: node, key, owner, local wake-up.

use std::sync::Arc;

use rand::Rng;
use tokio::sync::Notify;

use std::time::Instant;

use super::node::RedisNode;
use crate::attempt::Attempt;
use crate::guard::LockGuard;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::error::LockError;
use crate::lock::LockInfo;
use locklab_models::redis::spec::{RedisCommand, RedisReply};
use super::node::unexpected;

/// A fresh owner identity: 128 random bits in hex, the role of Redisson's per-client
/// UUID. Unique per handle, so a late release can never match someone else's grant.
pub fn random_owner() -> String {
    let v: u128 = rand::rng().random();
    format!("{v:032x}")
}

/// Node, key and owner of one lock handle.
#[derive(Clone, Debug)]
pub struct KeyHandle {
    /// The server the lock key lives on; a clone sharing its connection, recorder and
    /// release wake-ups with every other handle on that node.
    pub node: RedisNode,
    /// The lock key.
    pub key: String,
    /// The value/field that identifies this owner.
    pub owner: String,
    /// Notified on every local release of `key`.
    pub released: Arc<Notify>,
}

impl KeyHandle {
    /// A handle on `key` with a random owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        Self::with_owner(node, key, random_owner())
    }

    /// A handle on `key` with the given owner identity.
    pub fn with_owner(node: &RedisNode, key: &str, owner: String) -> Self {
        KeyHandle {
            released: node.wakeup(key),
            node: node.clone(),
            key: key.to_string(),
            owner,
        }
    }

    /// The info record of a lock on this handle.
    pub fn info(
        &self,
        protocol: &'static str,
        reentrant: bool,
        fenced: bool,
        teaching_only: bool,
    ) -> LockInfo {
        LockInfo {
            protocol,
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant,
            fenced,
            teaching_only,
        }
    }

    /// A release or renewal the server says found nothing of this handle's.
    pub fn not_held(&self) -> LockError {
        LockError::NotHeld {
            key: self.key.clone(),
            reason: None,
        }
    }

    /// What a release or renewal of this handle's key answered: `1` done, `0` not
    /// ours ([`not_held`](KeyHandle::not_held)), anything else unexpected.
    pub fn done_if_one(&self, command: &RedisCommand, reply: RedisReply) -> Result<(), LockError> {
        match reply {
            RedisReply::Integer(1) => Ok(()),
            RedisReply::Integer(0) => Err(self.not_held()),
            other => Err(unexpected(command, &other)),
        }
    }

    /// Sends a release of this handle's key ([`done_if_one`](KeyHandle::done_if_one)),
    /// waking this process's waiters on the key once the reply is in.
    pub async fn release_by(&self, command: RedisCommand) -> Result<(), LockError> {
        let released = &self.released;
        let reply = self
            .node
            .exec_then(command.clone(), || released.notify_one())
            .await?;
        self.done_if_one(&command, reply)
    }

    /// The attempt that won the lock on this handle's key: a guard over `held`.
    pub fn granted(
        &self,
        protocol: &'static str,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
    ) -> Attempt {
        Attempt::Acquired(LockGuard::new(protocol, &self.key, token, held, lease, sent_at))
    }
}
