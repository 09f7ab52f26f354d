//! `redis-del-unconditional` (teaching only): `SET key owner NX PX lease`, released by a
//! plain `DEL key`. A holder paused past its lease deletes the *next* holder's lock —
//! foreign release, then two holders.
//!
//! Commands: acquire `SET k o NX PX t`; release `DEL k` (1 deleted — whoever's it was —
//! 0 nothing there).

use locklab_models::registry::ScenarioId;

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::{set_nx_px_owner, DelHeld};
use super::node::RedisNode;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisDelUnconditional.name();

/// Teaching only: a handle whose release deletes the key whoever holds it.
#[derive(Clone, Debug)]
pub struct DelUnconditionalLock {
    handle: KeyHandle,
}

impl DelUnconditionalLock {
    /// A handle on `key` with a fresh owner (stored, but never checked).
    pub fn new(node: &RedisNode, key: &str) -> Self {
        DelUnconditionalLock {
            handle: KeyHandle::new(node, key),
        }
    }
}

impl DistributedLock for DelUnconditionalLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        let held = || DelHeld::of(&self.handle);
        Box::pin(set_nx_px_owner(&self.handle, PROTOCOL, lease, held))
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
