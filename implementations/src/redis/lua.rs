//! `redis-lua`: `SET key owner NX PX lease`, released by a Lua compare-and-delete and
//! renewed by a Lua compare-and-pexpire. The reference single-node lock: correct as long
//! as the holder finishes within its lease (or a watchdog keeps renewing), and the node
//! neither fails over nor loses data.
//!
//! Commands: acquire `SET k o NX PX t` (`OK` granted, nil busy); release
//! `EVAL compare-and-delete` (1 released, 0 not held); renew `EVAL compare-and-pexpire`
//! (1 renewed, 0 not held); with [`WaitReplicas`], `WAIT n t` after each grant.
//!
//! **Local hand-off** (opt-in, [`LuaLock::with_handoff`]; the plain constructor is
//! exactly the protocol the `redis-lua` model explores): handles of one [`RedisNode`] —
//! tasks of one process — queue behind the one of them that holds or is trying to get
//! the key (see [`super::handoff`]), and the holder's release becomes
//! `EVAL compare-and-transfer` to the first in line (see [`super::cas_held`]). Queued
//! tasks do not poll the server, except every [`super::handoff::MAX_QUEUED_WAIT`] in
//! case the holder crashed. Tasks of one process are served first come, first served;
//! clients of *other* processes are not queued and get no fairness guarantee, as with
//! any polling lock: a busy process can keep the key for as long as it has waiters.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Notify;

use super::cas_held::{after_grant, CasHeld};
use super::handle::KeyHandle;
use super::handoff::wait_turn;
use super::key_commands::{require_ttl, set_nx_px};
use super::local_queue::LocalQueue;
use super::node::RedisNode;
use super::replication::{replicated, WaitReplicas};
use crate::guard::LockGuard;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use crate::retry::{self, LocalTurns, Waited};
use crate::{Acquire, Acquiring};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisLua.name();

/// A handle on a `redis-lua` lock.
#[derive(Clone, Debug)]
pub struct LuaLock {
    handle: KeyHandle,
    wait_replicas: Option<WaitReplicas>,
    queue: Option<Arc<LocalQueue>>,
}

impl LuaLock {
    /// A handle on `key` with a fresh random owner: the plain protocol, release always
    /// compare-and-delete and waiters polling the server (with a local wake-up on
    /// release).
    pub fn new(node: &RedisNode, key: &str) -> Self {
        LuaLock {
            handle: KeyHandle::new(node, key),
            wait_replicas: None,
            queue: None,
        }
    }

    /// Hands over locally (see the module doc): tasks of one process queue behind the
    /// local owner, and a release with someone queued transfers the key in one command.
    /// No model explores this protocol; its tests are the real-server ones.
    pub fn with_handoff(mut self) -> Self {
        self.queue = Some(self.handle.node.local_queue(&self.handle.key));
        self
    }

    /// Waits for replicas after each grant; a grant not acknowledged in time is
    /// released and counts as a failed attempt.
    pub fn wait_for_replicas(mut self, wait: WaitReplicas) -> Self {
        self.wait_replicas = Some(wait);
        self
    }

    /// The owner value stored in the key.
    pub fn owner(&self) -> &str {
        &self.handle.owner
    }
}

impl DistributedLock for LuaLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, false)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = require_ttl(PROTOCOL, lease)?;
            let sent_at = Instant::now();
            if !set_nx_px(&self.handle, &self.handle.owner, ttl).await? {
                return Ok(Attempt::busy());
            }
            let Some(queue) = &self.queue else {
                let held = Arc::new(CasHeld::new(self.handle.clone()));
                after_grant(&held, self.wait_replicas).await?;
                return Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at));
            };
            queue.held_by(&self.handle.owner);
            let held = Arc::new(CasHeld::handing_over(self.handle.clone(), queue.clone()));
            let (key, held_dyn) = (&self.handle.key, held.clone());
            let guard = LockGuard::new(PROTOCOL, key, None, held_dyn, lease, sent_at);
            held.set_ownership(guard.ownership());
            let guard = replicated(guard, &self.handle, self.wait_replicas).await?;
            Ok(Attempt::Acquired(guard))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }

    fn acquire_observed<'a>(&'a self, call: Acquire<'a>) -> Acquiring<'a> {
        let turns = self.queue.as_ref().map(|_| self as &dyn LocalTurns);
        Box::pin(retry::acquire_loop_with(
            self,
            call,
            self.local_release(),
            turns,
        ))
    }
}

impl LocalTurns for LuaLock {
    fn local_holder(&self) -> bool {
        self.queue
            .as_ref()
            .and_then(|q| q.holder())
            .is_some_and(|h| h != self.handle.owner)
    }

    fn wait_turn(&self, lease: Lease, deadline: Instant) -> BoxFuture<'_, Waited> {
        Box::pin(async move {
            let Some(queue) = &self.queue else {
                return Waited::AskServer;
            };
            let replicas = self.wait_replicas;
            wait_turn(&self.handle, queue, PROTOCOL, lease, deadline, replicas).await
        })
    }

    fn give_up(&self) {
        if let Some(q) = &self.queue {
            q.give_up(&self.handle.owner);
        }
    }
}
