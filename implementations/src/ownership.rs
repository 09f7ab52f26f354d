//! Whether a guard still owns its lock, as far as the client can know.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::hold_state::RenewalOutcome;

/// Why a guard no longer owns its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// The server refused a renewal: the key is gone or belongs to someone else.
    Refused,
    /// The lease (minus the clock-drift margin) ran out without a confirmed renewal, for
    /// instance because the server could not be reached.
    Expired,
    /// The client lost its connection to the lock servers: the lock may still be held,
    /// but a client that cannot tell must stop before the servers can have let it go
    /// (Curator's SUSPENDED).
    Disconnected,
}

/// The safety margin for clock drift taken off every lease, as Redlock does:
/// 1 % of the TTL plus 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// The last instant a grant (or renewal) sent at `sent_at` with `ttl` is still safely
/// ours: counted from *before* the request left, minus the drift margin.
pub fn valid_until(sent_at: Instant, ttl: Duration) -> Instant {
    sent_at + ttl.saturating_sub(drift(ttl))
}

const NO_DEADLINE: u64 = u64::MAX;

/// One renewal a watchdog sent, as its observer hears of it once answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renewal {
    /// When the request left.
    pub sent_at: Instant,
    /// The lease it asked for.
    pub lease: Duration,
    /// What the server said: renewed, refused (the lock is not ours), or nothing (it
    /// may or may not have taken effect).
    pub outcome: RenewalOutcome,
}

/// Told of every renewal a watchdog sends (a history recorder's way to see them).
pub type RenewalObserver = std::sync::Arc<dyn Fn(Renewal) + Send + Sync>;

/// Shared by a guard and its watchdog: the validity deadline and the lost flag.
pub struct Ownership {
    base: Instant,
    deadline_us: AtomicU64,
    lost: watch::Sender<Option<LostReason>>,
    observer: std::sync::Mutex<Option<RenewalObserver>>,
}

impl std::fmt::Debug for Ownership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ownership")
            .field("valid_until", &self.valid_until())
            .field("lost", &*self.lost.borrow())
            .finish_non_exhaustive()
    }
}

impl Ownership {
    /// Owned until `valid_until` (`None`: no lease, owned until released).
    pub fn new(valid_until: Option<Instant>) -> Self {
        let base = Instant::now();
        let o = Ownership {
            base,
            deadline_us: AtomicU64::new(NO_DEADLINE),
            lost: watch::channel(None).0,
            observer: std::sync::Mutex::new(None),
        };
        if let Some(v) = valid_until {
            o.deadline_us.store(o.micros(v), Ordering::Release);
        }
        o
    }

    fn micros(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_micros()).unwrap_or(NO_DEADLINE - 1)
    }

    /// Moves the deadline later (a renewal or re-entry confirmed by the server). Never
    /// moves it earlier: an older, slower answer must not shorten a newer one.
    pub fn extend(&self, valid_until: Instant) {
        let us = self.micros(valid_until);
        let _ = self
            .deadline_us
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur != NO_DEADLINE && us > cur).then_some(us)
            });
    }

    /// Has `observer` told of every renewal a watchdog sends from now on.
    pub fn observe_renewals(&self, observer: RenewalObserver) {
        if let Ok(mut o) = self.observer.lock() {
            *o = Some(observer);
        }
    }

    /// Tells the observer, if any, of a renewal.
    pub(crate) fn renewed(&self, renewal: Renewal) {
        // Cloned out so the observer runs without the lock held.
        let observer = self.observer.lock().ok().and_then(|o| o.clone());
        if let Some(o) = observer {
            o(renewal);
        }
    }

    /// Records that ownership is gone; the first reason sticks.
    pub fn mark_lost(&self, reason: LostReason) {
        self.lost.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }

    /// The validity deadline, if the lock has a lease.
    pub fn valid_until(&self) -> Option<Instant> {
        match self.deadline_us.load(Ordering::Acquire) {
            NO_DEADLINE => None,
            us => Some(self.base + Duration::from_micros(us)),
        }
    }

    /// Why ownership is gone, or `None` while the client may still believe it holds.
    pub fn lost_reason(&self) -> Option<LostReason> {
        if let Some(r) = *self.lost.borrow() {
            return Some(r);
        }
        if self.valid_until().is_some_and(|d| Instant::now() >= d) {
            self.mark_lost(LostReason::Expired);
            return Some(LostReason::Expired);
        }
        None
    }

    /// Whether ownership is gone.
    pub fn is_lost(&self) -> bool {
        self.lost_reason().is_some()
    }

    /// Resolves when the lock says ownership is gone ([`Ownership::mark_lost`]: a refused
    /// renewal, a lost session), not when a lease deadline passes: what a client hears
    /// that reacts to its lock's notices without watching its own clock.
    pub async fn told_lost(&self) -> LostReason {
        let mut rx = self.lost.subscribe();
        loop {
            if let Some(r) = *rx.borrow_and_update() {
                return r;
            }
            if rx.changed().await.is_err() {
                // The sender lives as long as `self`; unreachable, but never spin.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Resolves when ownership is lost (never, for a lock without lease that nobody
    /// takes away). Use it in a `select!` around the critical section.
    pub async fn lost(&self) -> LostReason {
        let mut rx = self.lost.subscribe();
        loop {
            if let Some(r) = self.lost_reason() {
                return r;
            }
            match self.valid_until() {
                Some(d) => {
                    tokio::select! {
                        _ = rx.changed() => {}
                        _ = tokio::time::sleep_until(d.into()) => {}
                    }
                }
                None => {
                    if rx.changed().await.is_err() {
                        // The sender lives as long as `self`; unreachable, but never spin.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }
}
