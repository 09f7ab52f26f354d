//! One try of an acquire: what it came to, and who hears of it.

use std::time::{Duration, Instant};

use crate::guard::LockGuard;

/// One call of [`acquire_observed`](crate::DistributedLock::acquire_observed): how long
/// it may wait, the lease it asks for, and who hears of each of its attempts.
#[derive(Clone, Copy)]
pub struct Acquire<'a> {
    /// The longest the call may wait for a busy lock.
    pub wait: Duration,
    /// The lease each attempt asks for.
    pub lease: crate::Lease,
    /// Told of every attempt (see [`AttemptObserver`]).
    pub observer: &'a dyn AttemptObserver,
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
        /// Why, in the lock's own words, when it gave any (an external client's
        /// `reason`): kept in the history's note.
        reason: Option<String>,
    },
}

impl Attempt {
    /// Busy, and the lock said no more.
    pub fn busy() -> Self {
        Attempt::Busy {
            retry_after: None,
            reason: None,
        }
    }
}

/// What one attempt of an acquire came to, as [`AttemptObserver::ended`] hears it.
#[derive(Debug)]
pub enum AttemptOutcome<'a> {
    /// The lock service granted it, with this fencing token.
    Granted {
        /// The grant's fencing token.
        token: Option<u64>,
        /// The lease the service says it granted, when it said so and it is not the
        /// one asked for (a library that rounds to whole seconds): the history's
        /// checks hold the grant to this lease.
        lease: Option<crate::Lease>,
    },
    /// The service answered that someone holds it: nothing was granted.
    Busy {
        /// Why, in the lock's words, when it said.
        reason: Option<&'a str>,
    },
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
    fn handed_over(&self, since: Instant, token: Option<u64>);
}

/// The observer of an acquire nobody records.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unobserved;

impl AttemptObserver for Unobserved {
    fn started(&self) {}
    fn ended(&self, _outcome: AttemptOutcome<'_>) {}
    fn handed_over(&self, _since: Instant, _token: Option<u64>) {}
}

/// The observer of a queue lock's acquire (etcd's `concurrency.Mutex`, ZooKeeper's
/// recipe): the first try puts the client in the queue, and from then on the server
/// hands it the lock the moment the holder before it leaves, whether or not the client
/// is asking just then. So the tries are one operation, from the first try to the
/// grant; a try that finds the client still queued ends nothing, and an acquire that
/// gives up while queued ends as unknown (the queue may have granted it meanwhile).
pub struct Queued<'a> {
    inner: &'a dyn AttemptObserver,
    open: std::sync::atomic::AtomicBool,
}

impl<'a> Queued<'a> {
    /// Reports to `inner`.
    pub fn new(inner: &'a dyn AttemptObserver) -> Self {
        Queued {
            inner,
            open: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Ends the operation an acquire that returned without a grant left open.
    pub fn close(&self, why: &str) {
        if self.open.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.inner.ended(AttemptOutcome::Unknown(why));
        }
    }
}

impl AttemptObserver for Queued<'_> {
    fn started(&self) {
        if !self.open.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.inner.started();
        }
    }

    fn ended(&self, outcome: AttemptOutcome<'_>) {
        if !matches!(outcome, AttemptOutcome::Busy { .. }) {
            self.open.store(false, std::sync::atomic::Ordering::SeqCst);
            self.inner.ended(outcome);
        }
    }

    fn handed_over(&self, since: Instant, token: Option<u64>) {
        self.inner.handed_over(since, token);
    }
}
