//! The bounded waiting loop behind every `acquire`.

use std::time::{Duration, Instant};

use rand::Rng;
use tokio::sync::Notify;

use crate::error::LockError;
use crate::guard::LockGuard;
use crate::lock::{Attempt, DistributedLock, Lease};

const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// How far past the deadline an attempt may run before it is abandoned. An attempt is
/// left to finish rather than cancelled at the deadline because cancelling it midway can
/// leave a grant nobody releases (a Redlock attempt cut between its `SET`s and its
/// clean-up); this crate's attempts are bounded by their nodes' response timeouts, so
/// the cap only guards against third-party locks that never return.
pub const MAX_ATTEMPT_OVERRUN: Duration = Duration::from_secs(2);

/// Tries `lock` until it is granted or `wait` has passed.
///
/// Between attempts it sleeps a jittered, growing delay (capped by the holder's remaining
/// lease when the server told it), and wakes early when `released` is notified — a
/// release by another handle of the same client, so that tasks of one process hand the
/// lock over without polling delay. No attempt starts after the deadline, and a started
/// one runs to its end (see [`MAX_ATTEMPT_OVERRUN`]), so an unreachable server yields
/// [`LockError::Timeout`] (with the last error) within `wait` plus one attempt.
pub async fn acquire_loop<L: DistributedLock + ?Sized>(
    lock: &L,
    wait: Duration,
    lease: Lease,
    released: Option<&Notify>,
) -> Result<LockGuard, LockError> {
    let start = Instant::now();
    let deadline = start + wait;
    let mut last_error: Option<LockError> = None;
    let mut attempt: u32 = 0;
    loop {
        let notified = released.map(|n| n.notified());
        tokio::pin!(notified);
        if let Some(n) = notified.as_mut().as_pin_mut() {
            n.enable();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let bound = left + MAX_ATTEMPT_OVERRUN;
        let retry_after = match tokio::time::timeout(bound, lock.try_acquire(lease)).await {
            Ok(Ok(Attempt::Acquired(g))) => return Ok(g),
            Ok(Ok(Attempt::Busy { retry_after })) => retry_after,
            Ok(Err(e)) if e.is_retryable() => {
                last_error = Some(e);
                None
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => None,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(LockError::Timeout {
                key: lock.info().key,
                waited: now - start,
                last_error: last_error.map(Box::new),
            });
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
