//! The bounded waiting loop behind every `acquire`.

use std::time::{Duration, Instant};

use rand::Rng;
use tokio::sync::Notify;

use crate::attempt::{Acquire, Attempt, AttemptOutcome, Queued};
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::lease::Lease;

const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// How far past the deadline an attempt may run before it is abandoned. An attempt is
/// left to finish rather than cancelled at the deadline because cancelling it midway can
/// leave a grant nobody releases (a Redlock attempt cut between its `SET`s and its
/// clean-up); this crate's attempts are bounded by their nodes' response timeouts, so
/// the cap only guards against third-party locks that never return.
pub const MAX_ATTEMPT_OVERRUN: Duration = Duration::from_secs(2);

/// What the waiting loop needs of a lock: one attempt, and the lock's name for the
/// timeout error. Every [`DistributedLock`](crate::DistributedLock) is one. The loop
/// asks for this rather than for the trait because the trait's default `acquire` is
/// the loop: this way the lock module builds on this one and not the other way round.
pub trait Retryable: Send + Sync {
    /// One attempt: [`try_acquire`](crate::DistributedLock::try_acquire).
    fn attempt(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>>;

    /// The lock name (the key of [`LockInfo`](crate::LockInfo)).
    fn lock_key(&self) -> String;
}

/// Tries `lock` until it is granted or `wait` has passed.
///
/// Between attempts it sleeps a jittered, growing delay (capped by the holder's remaining
/// lease when the server told it), and wakes early when `released` is notified — a
/// release by another handle of the same client, so that tasks of one process hand the
/// lock over without polling delay. No attempt starts after the deadline, and a started
/// one runs to its end (see [`MAX_ATTEMPT_OVERRUN`]), so an unreachable server yields
/// [`LockError::Timeout`] (with the last error) within `wait` plus one attempt.
/// `call.observer` hears of every attempt (see [`AttemptObserver`](crate::AttemptObserver)).
pub async fn acquire_loop<L: Retryable + ?Sized>(
    lock: &L,
    call: Acquire<'_>,
    released: Option<&Notify>,
) -> Result<LockGuard, LockError> {
    acquire_loop_with(lock, call, released, None).await
}

/// [`acquire_loop`] for a queue lock: its tries are one operation, from joining the
/// queue to the grant (see [`Queued`]), and an acquire that gives up while queued ends
/// that operation as unknown.
pub async fn acquire_queued<L: Retryable + ?Sized>(
    lock: &L,
    call: Acquire<'_>,
    released: Option<&Notify>,
) -> Result<LockGuard, LockError> {
    let queued = Queued::new(call.observer);
    let result = acquire_loop(
        lock,
        Acquire {
            observer: &queued,
            ..call
        },
        released,
    )
    .await;
    if let Err(e) = &result {
        queued.close(&e.to_string());
    }
    result
}

/// What waiting for a lock held in this process came to (see [`LocalTurns`]).
pub(crate) enum Waited {
    /// The holder handed the lock over.
    Granted(LockGuard),
    /// Ask the server at once: the local owner gave up or its hand-off did not
    /// happen, the queue's patience ran out, or nobody in this process holds the lock
    /// (the caller is the local owner now).
    AskServer,
    /// The hand-off happened but what follows a grant failed (`WAIT`).
    Failed(LockError),
}

/// A way to wait for a busy lock without polling the server: queue behind a holder in
/// the same process, which hands the lock over when it releases.
pub(crate) trait LocalTurns: Sync {
    /// Whether a holder of this process is on record (so a busy answer is its doing,
    /// and waiting in its queue beats polling).
    fn local_holder(&self) -> bool;

    /// Queue behind the local holder, if there is one, and wait for its hand-off, at
    /// most until `deadline`.
    fn wait_turn(&self, lease: Lease, deadline: Instant) -> BoxFuture<'_, Waited>;

    /// The acquire ends without a grant (failed, timed out, or dropped): let the next
    /// local waiter try.
    fn give_up(&self);
}

/// Calls [`LocalTurns::give_up`] unless the acquire succeeded, also when it is dropped.
struct GiveUpUnlessGranted<'a>(Option<&'a dyn LocalTurns>);

impl GiveUpUnlessGranted<'_> {
    fn granted(mut self, g: LockGuard) -> Result<LockGuard, LockError> {
        self.0 = None;
        Ok(g)
    }
}

impl Drop for GiveUpUnlessGranted<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.0 {
            t.give_up();
        }
    }
}

/// [`acquire_loop`], waiting through `turns` whenever a holder of this process is on
/// record: then the server is asked only when the queue sends the waiter back (the
/// hand-off failed, or the holder kept it past the queue's patience), and a busy
/// answer goes straight back into the queue without backoff.
pub(crate) async fn acquire_loop_with<L: Retryable + ?Sized>(
    lock: &L,
    call: Acquire<'_>,
    released: Option<&Notify>,
    turns: Option<&dyn LocalTurns>,
) -> Result<LockGuard, LockError> {
    let Acquire {
        wait,
        lease,
        observer,
    } = call;
    let start = Instant::now();
    let deadline = start + wait;
    let mut last_error: Option<LockError> = None;
    let mut attempt: u32 = 0;
    let outcome = GiveUpUnlessGranted(turns);
    loop {
        // Behind a holder of this process, wait for its hand-off rather than asking the
        // server; the queue sends us back to the server when that is worth it.
        if let Some(t) = turns {
            let since = Instant::now();
            match t.wait_turn(lease, deadline).await {
                Waited::Granted(g) => {
                    observer.handed_over(since, g.token());
                    return outcome.granted(g);
                }
                Waited::Failed(e) if e.is_retryable() => last_error = Some(e),
                Waited::Failed(e) => return Err(e),
                Waited::AskServer => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(timeout(lock, now - start, last_error));
            }
        }
        let notified = released.map(|n| n.notified());
        tokio::pin!(notified);
        if let Some(n) = notified.as_mut().as_pin_mut() {
            n.enable();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let bound = left + MAX_ATTEMPT_OVERRUN;
        observer.started();
        let tried = tokio::time::timeout(bound, lock.attempt(lease)).await;
        match &tried {
            Ok(Ok(Attempt::Acquired(g))) => observer.ended(AttemptOutcome::Granted {
                token: g.token(),
                lease: g.granted_lease(),
            }),
            Ok(Ok(Attempt::Busy { reason, .. })) => observer.ended(AttemptOutcome::Busy {
                reason: reason.as_deref(),
            }),
            // An error may hide a grant whose reply was lost.
            Ok(Err(e)) => observer.ended(AttemptOutcome::Unknown(&e.to_string())),
            Err(_) => observer.ended(AttemptOutcome::Unknown("the attempt did not end in time")),
        }
        let retry_after = match tried {
            Ok(Ok(Attempt::Acquired(g))) => return outcome.granted(g),
            Ok(Ok(Attempt::Busy { .. })) if turns.is_some_and(|t| t.local_holder()) => continue,
            Ok(Ok(Attempt::Busy { retry_after, .. })) => retry_after,
            Ok(Err(e)) if e.is_retryable() => {
                last_error = Some(e);
                None
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => None,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(timeout(lock, now - start, last_error));
        }
        attempt = attempt.saturating_add(1);
        let cap = MAX_BACKOFF.min(Duration::from_micros(100u64 << attempt.min(9)));
        let cap = retry_after
            .map_or(cap, |r| r.min(cap))
            .max(Duration::from_micros(100));
        let pause = rand::rng().random_range(cap / 2..=cap);
        let pause = pause.min(deadline.saturating_duration_since(now));
        match notified.as_mut().as_pin_mut() {
            Some(n) => {
                tokio::select! {
                    _ = n => {}
                    _ = tokio::time::sleep(pause) => {}
                }
            }
            None => tokio::time::sleep(pause).await,
        }
    }
}

fn timeout<L: Retryable + ?Sized>(
    lock: &L,
    waited: Duration,
    last_error: Option<LockError>,
) -> LockError {
    LockError::Timeout {
        key: lock.lock_key(),
        waited,
        last_error: last_error.map(Box::new),
    }
}
