//! `redis-setnx-expire` (teaching only): `SETNX key owner`, then `EXPIRE key seconds`
//! as a second command, released by `DEL key`. A client that dies between the two leaves
//! a key without TTL: the same deadlock as no TTL at all. [`SetNxExpireLock::crash_after_setnx`]
//! injects exactly that crash.
//!
//! Commands: acquire `SETNX k o` (1 granted, 0 busy) then `EXPIRE k s` (the lease
//! rounded up to whole seconds); release `DEL k`.

use locklab_models::registry::ScenarioId;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Notify;

use super::handle::KeyHandle;
use super::key_commands::{fixed_ttl, setnx, DelHeld};
use super::node::{unexpected, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisSetnxExpire.name();

/// Teaching only: grant and TTL in two commands.
#[derive(Clone, Debug)]
pub struct SetNxExpireLock {
    handle: KeyHandle,
    /// Crash right after the n-th `SETNX` that wins (`0`: never).
    crash_at_win: u32,
    /// `SETNX`es won so far, shared by the handle's clones.
    wins: Arc<AtomicU32>,
}

impl SetNxExpireLock {
    /// A handle on `key` with a fresh owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        SetNxExpireLock {
            handle: KeyHandle::new(node, key),
            crash_at_win: 0,
            wins: Arc::new(AtomicU32::new(0)),
        }
    }

    /// Fault injection: after a successful `SETNX`, "crash" — return
    /// [`LockError::InjectedFault`] without sending `EXPIRE` or releasing.
    pub fn crash_after_setnx(self, crash: bool) -> Self {
        self.crash_after_setnx_win(u32::from(crash))
    }

    /// Fault injection: "crash" as [`Self::crash_after_setnx`] does, but only after the
    /// `n`-th `SETNX` this handle wins (`0`: never), so that it has held the lock
    /// properly before.
    pub fn crash_after_setnx_win(mut self, n: u32) -> Self {
        self.crash_at_win = n;
        self
    }
}

impl DistributedLock for SetNxExpireLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = fixed_ttl(PROTOCOL, lease)?;
            let sent_at = Instant::now();
            if !setnx(&self.handle).await? {
                return Ok(Attempt::busy());
            }
            let won = self.wins.fetch_add(1, Ordering::Relaxed) + 1;
            if won == self.crash_at_win {
                return Err(LockError::InjectedFault("crash between SETNX and EXPIRE"));
            }
            let seconds = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
            let command = RedisCommand::Expire {
                key: self.handle.key.clone(),
                seconds: seconds.max(1),
            };
            match self.handle.node.exec(command.clone()).await? {
                RedisReply::Integer(1) => {}
                other => return Err(unexpected(&command, &other)),
            }
            let held = DelHeld::of(&self.handle);
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
