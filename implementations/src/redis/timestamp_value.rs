//! `redis-timestamp-value` (teaching only): `SET key <now in ms> NX PX lease`, released
//! by the Lua compare-and-delete on that timestamp. The timestamp stands in for an owner
//! id, but it is not unique: two grants in the same millisecond (or on clients whose
//! clocks agree) carry the same value, and a holder paused past its lease then deletes
//! the next holder's lock (ABA). [`TimestampValueLock::with_clock`] makes two grants
//! share a tick on purpose.
//!
//! Commands: acquire `SET k <ms> NX PX t`; release `EVAL compare-and-delete [k] [<ms>]`.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use super::cas_held::CasHeld;
use super::handle::KeyHandle;
use super::key_commands::{fixed_ttl, set_nx_px};
use super::node::RedisNode;
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::{DistributedLock, LockInfo};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::RedisTimestampValue.name();

/// A source of "current time in ms".
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Teaching only: the lock value is a timestamp.
#[derive(Clone)]
pub struct TimestampValueLock {
    handle: KeyHandle,
    clock: Clock,
}

impl std::fmt::Debug for TimestampValueLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimestampValueLock")
            .field("handle", &self.handle)
            .finish()
    }
}

impl TimestampValueLock {
    /// A handle on `key` stamping grants with the wall clock.
    pub fn new(node: &RedisNode, key: &str) -> Self {
        TimestampValueLock {
            handle: KeyHandle::new(node, key),
            clock: Arc::new(wall_clock_ms),
        }
    }

    /// Fault injection: stamp grants with this clock (a frozen one makes every grant
    /// fall in the same tick).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}

impl DistributedLock for TimestampValueLock {
    fn info(&self) -> LockInfo {
        self.handle.info(PROTOCOL, false, false, true)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = fixed_ttl(PROTOCOL, lease)?;
            let stamp = (self.clock)().to_string();
            let sent_at = Instant::now();
            if !set_nx_px(&self.handle, &stamp, ttl).await? {
                return Ok(Attempt::busy());
            }
            let mut handle = self.handle.clone();
            handle.owner = stamp;
            let held = Arc::new(CasHeld::new(handle));
            Ok(self.handle.granted(PROTOCOL, None, held, lease, sent_at))
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
