//! The lock interface every backend implements.
//!
//! A lock value is a *handle* bound to one lock name and one owner identity (what
//! Redisson calls `UUID:threadId`). Tasks that must exclude each other use different
//! handles; a handle acquired again while it holds is a re-entry on reentrant locks and
//! simply waits on the others. Handles are cheap: make one per task.
//!
//! To plug your own lock into the harness, implement [`DistributedLock`] for your handle
//! and [`HeldLock`](crate::HeldLock) for what a successful acquire holds, and build the
//! guard with [`LockGuard::new`](crate::LockGuard::new). The default
//! [`DistributedLock::acquire`] turns your `try_acquire` into a bounded waiting loop.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::LockError;
use crate::guard::LockGuard;
use crate::retry::{self, Retryable};

// Also reachable here, where they were first defined: code outside the crate may name
// them by this path.
pub use crate::attempt::{Acquire, Attempt, AttemptObserver, AttemptOutcome, Unobserved};
pub use crate::box_future::BoxFuture;
pub use crate::lease::Lease;

/// What an acquire comes to: the guard, or why not.
pub type Acquiring<'a> = BoxFuture<'a, Result<LockGuard, LockError>>;

/// What a lock is, for reports and for the harness's expectations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    /// The catalog id of the protocol (`redis-lua`, `redlock`, …).
    pub protocol: &'static str,
    /// The lock name.
    pub key: String,
    /// The owner identity the backend sees (the value stored in the lock).
    pub owner: String,
    /// Whether the holder may acquire again without releasing.
    pub reentrant: bool,
    /// Whether grants carry a fencing token.
    pub fenced: bool,
    /// Deliberately broken: for teaching and for the harness to find the fault, never
    /// for production.
    pub teaching_only: bool,
}

/// An async distributed lock.
///
/// Every method is cancel-safe in the sense that matters for a lock: dropping an
/// `acquire` future may leave a grant on the server that nobody releases, but its lease
/// (when it has one) bounds the damage, exactly as a crashed client would.
pub trait DistributedLock: Send + Sync {
    /// What this lock is.
    fn info(&self) -> LockInfo;

    /// One attempt, without waiting for a busy lock.
    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>>;

    /// Waits up to `wait` for the lock. Returns [`LockError::Timeout`] when the lock
    /// stayed busy (or the backend unreachable: the last error is attached) for the
    /// whole time; never blocks longer than `wait` plus one attempt (an attempt of this
    /// crate's locks is bounded by its nodes' response timeouts).
    fn acquire(&self, wait: Duration, lease: Lease) -> Acquiring<'_> {
        self.acquire_observed(Acquire {
            wait,
            lease,
            observer: &Unobserved,
        })
    }

    /// Notified when a handle of this process releases the same lock, so that a waiting
    /// [`acquire`](DistributedLock::acquire) tries again at once instead of sleeping out
    /// its back-off. `None` (the default): the wait polls the server only.
    fn local_release(&self) -> Option<&Notify> {
        None
    }

    /// A stop-the-world pause of this client for `d` (a GC pause, a stopped VM), as the
    /// harness stages it inside a critical section. The default just waits: a lock that
    /// lives in the harness's process has nothing of its own to stop. A lock whose
    /// client is a process of its own stops that whole process (`SIGSTOP`, then
    /// `SIGCONT` after `d`), so its library's own threads — watchdogs, session pings —
    /// stop with it.
    fn stall(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(d))
    }

    /// [`DistributedLock::acquire`], telling `call.observer` of every attempt. Locks that
    /// wait their own way override this one, not `acquire`.
    fn acquire_observed<'a>(&'a self, call: Acquire<'a>) -> Acquiring<'a> {
        let released = self.local_release();
        Box::pin(retry::acquire_loop(self, call, released))
    }
}

impl<L: DistributedLock + ?Sized> Retryable for L {
    fn attempt(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        self.try_acquire(lease)
    }

    fn lock_key(&self) -> String {
        self.info().key
    }
}

/// The process's one copy of each protocol name: a lock's info names its protocol as
/// a `&'static str`, and a run builds a lock per client.
pub(crate) fn interned(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let new: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(new);
    new
}
