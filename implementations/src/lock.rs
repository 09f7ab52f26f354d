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

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::LockError;
use crate::guard::LockGuard;

/// A boxed, sendable future: keeps the trait usable as `dyn DistributedLock`, so the
/// harness can pick a protocol by its catalog id at run time.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How long a granted lock lives if its holder goes silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lease {
    /// No expiry: held until released. Only the teaching locks without a TTL take it,
    /// which is exactly why they deadlock when a holder crashes.
    Unbounded,
    /// Expires this long after the grant unless [`LockGuard::renew`] extends it.
    Fixed(Duration),
    /// Granted with this lease, then renewed every lease/3 by a watchdog task until the
    /// guard is released (Redisson's default: 30 s). The watchdog stops on release and
    /// reports lost ownership when a renewal is refused or the lease runs out unrenewed.
    Watchdog(Duration),
}

impl Lease {
    /// The TTL sent to the server, if any.
    pub fn ttl(self) -> Option<Duration> {
        match self {
            Lease::Unbounded => None,
            Lease::Fixed(d) | Lease::Watchdog(d) => Some(d),
        }
    }
}

/// The outcome of one attempt.
#[derive(Debug)]
pub enum Attempt {
    /// The lock is yours.
    Acquired(LockGuard),
    /// Someone else holds it.
    Busy {
        /// How long the current holder's lease still runs, when the server said so
        /// (Redisson's script answers `PTTL`): a hint for when to try again.
        retry_after: Option<Duration>,
    },
}

/// What one attempt of an acquire came to, as [`AttemptObserver::ended`] hears it.
#[derive(Debug)]
pub enum AttemptOutcome<'a> {
    /// The lock service granted it, with this fencing token.
    Granted(Option<u64>),
    /// The service answered that someone holds it: nothing was granted.
    Busy,
    /// No answer, or an error: the attempt may or may not have been granted.
    Unknown(&'a str),
}

/// Told of every attempt an `acquire` makes, as it makes it, so that a history records
/// each try as its own operation. One acquire that waits seconds behind 63 others is
/// one operation a checker can place anywhere in those seconds; its tries, each a
/// round trip long, are operations it can place almost exactly.
pub trait AttemptObserver: Send + Sync {
    /// An attempt is about to be sent.
    fn started(&self);
    /// The attempt that started last has ended.
    fn ended(&self, outcome: AttemptOutcome<'_>);
    /// A holder of this process handed the lock over after a local wait that began at
    /// `since` (no attempt was sent meanwhile): a grant whose instant lies in that wait.
    fn handed_over(&self, since: std::time::Instant, token: Option<u64>);
}

/// The observer of an acquire nobody records.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unobserved;

impl AttemptObserver for Unobserved {
    fn started(&self) {}
    fn ended(&self, _outcome: AttemptOutcome<'_>) {}
    fn handed_over(&self, _since: std::time::Instant, _token: Option<u64>) {}
}

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
    fn acquire(&self, wait: Duration, lease: Lease) -> BoxFuture<'_, Result<LockGuard, LockError>> {
        self.acquire_observed(wait, lease, &Unobserved)
    }

    /// [`DistributedLock::acquire`], telling `observer` of every attempt. Locks that
    /// wait their own way override this one, not `acquire`.
    fn acquire_observed<'a>(
        &'a self,
        wait: Duration,
        lease: Lease,
        observer: &'a dyn AttemptObserver,
    ) -> BoxFuture<'a, Result<LockGuard, LockError>> {
        Box::pin(crate::retry::acquire_loop(
            self, wait, lease, None, observer,
        ))
    }
}
