//! `redis-setnx-expire` (teaching only): `SETNX key owner`, then `EXPIRE key seconds`
//! as a second command, released by `DEL key`. A client that dies between the two leaves
//! a key without TTL: the same deadlock as no TTL at all. [`SetNxExpireLock::crash_after_setnx`]
//! injects exactly that crash.
//!
//! Commands: acquire `SETNX k o` (1 granted, 0 busy) then `EXPIRE k s` (the lease
//! rounded up to whole seconds); release `DEL k`.

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
pub const PROTOCOL: &str = "redis-setnx-expire";

/// Teaching only: grant and TTL in two commands.
#[derive(Clone, Debug)]
pub struct SetNxExpireLock {
    handle: KeyHandle,
    crash_after_setnx: bool,
}

impl SetNxExpireLock {
    /// A handle on `key` with a fresh owner.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        SetNxExpireLock {
            handle: KeyHandle::new(node, key),
            crash_after_setnx: false,
        }
    }

    /// Fault injection: after a successful `SETNX`, "crash" — return
    /// [`LockError::InjectedFault`] without sending `EXPIRE` or releasing.
    pub fn crash_after_setnx(mut self, crash: bool) -> Self {
        self.crash_after_setnx = crash;
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
                return Ok(Attempt::Busy { retry_after: None });
            }
            if self.crash_after_setnx {
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
