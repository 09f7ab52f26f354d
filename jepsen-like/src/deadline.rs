//! When the clients stop taking the lock: the run's planned end, pushed back when a
//! fault fires late, so that a fault that waited for an event (the first grant) on a
//! slow machine still leaves the clients time to show what it does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// An end that only moves later.
#[derive(Debug)]
pub struct Deadline {
    base: Instant,
    /// Nanoseconds after `base`.
    at_ns: AtomicU64,
}

impl Deadline {
    /// Ends at `at`.
    pub fn new(at: Instant) -> Self {
        let base = Instant::now();
        let deadline = Deadline {
            base,
            at_ns: AtomicU64::new(0),
        };
        deadline.at_least(at);
        deadline
    }

    /// When it ends now.
    pub fn get(&self) -> Instant {
        self.base + Duration::from_nanos(self.at_ns.load(Ordering::Acquire))
    }

    /// How long is left from now.
    pub fn left(&self) -> Duration {
        self.get().saturating_duration_since(Instant::now())
    }

    /// Ends no earlier than `at`.
    pub fn at_least(&self, at: Instant) {
        let ns =
            u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX);
        self.at_ns.fetch_max(ns, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_moves_later() {
        let now = Instant::now();
        let d = Deadline::new(now + Duration::from_secs(4));
        d.at_least(now + Duration::from_secs(1));
        assert_eq!(d.get(), now + Duration::from_secs(4));
        d.at_least(now + Duration::from_secs(6));
        assert_eq!(d.get(), now + Duration::from_secs(6));
        assert!(d.left() > Duration::from_secs(5));
    }
}
