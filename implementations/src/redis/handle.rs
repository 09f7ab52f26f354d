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
use crate::lock::LockInfo;

/// A fresh owner identity: 128 random bits in hex, the role of Redisson's per-client
/// UUID. Unique per handle, so a late release can never match someone else's grant.
pub fn random_owner() -> String {
    let v: u128 = rand::rng().random();
    format!("{v:032x}")
}

/// Node, key and owner of one lock handle.
#[derive(Clone, Debug)]
pub struct KeyHandle {
    /// The node.
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

    /// The attempt that won the lock on this handle's key: a guard over `held`.
    pub fn granted(
        &self,
        protocol: &'static str,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
    ) -> Attempt {
        Attempt::Acquired(self.granted_guard(protocol, token, held, lease, sent_at))
    }

    /// The guard of a grant on this handle's key.
    pub fn granted_guard(
        &self,
        protocol: &'static str,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
    ) -> LockGuard {
        LockGuard::new(protocol, &self.key, token, held, lease, sent_at)
    }
}
