//! Client-side hold accounting and the watchdog's decisions, in one atomic word.
//!
//! A lock handle counts its own holds (Redisson's `ExpirationEntry`): the first hold
//! starts a *generation* and its watchdog, the last release ends it. The watchdog of
//! generation `g` asks [`HoldState::may_renew`] before each renewal and hands the
//! server's answer to [`HoldState::after_renewal`]; both say "stop" as soon as generation
//! `g` is over, so
//!
//! - no renewal is *started* after the release that ended `g` was decided, and
//! - a renewal that was already in flight when the release happened can neither keep the
//!   watchdog going nor be mistaken for lost ownership.
//!
//! Releasing code must call [`HoldState::exit`] *before* it sends the release command:
//! then a "not held" answer to a racing renewal always finds the generation over. The
//! renew commands themselves are conditional on ownership (compare-and-pexpire,
//! `HEXISTS`), so a renewal that reaches the server after the release deletes nothing
//! and creates nothing: a released lock is never resurrected. `src/loom_tests.rs`
//! model-checks all of this under `--cfg loom`.

use crate::sync::{AtomicU64, Ordering};

const COUNT_MASK: u64 = 0xFFFF_FFFF;

fn split(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, (word & COUNT_MASK) as u32)
}

fn join(generation: u32, count: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(count)
}

/// Hold count and generation of one lock handle.
#[derive(Debug)]
pub struct HoldState {
    word: AtomicU64,
}

/// What [`HoldState::enter`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entered {
    /// The generation the hold belongs to.
    pub generation: u32,
    /// This hold started the generation (start the watchdog).
    pub first: bool,
    /// Holds after entering.
    pub count: u32,
}

/// What [`HoldState::exit`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exited {
    /// The generation the released hold belonged to.
    pub generation: u32,
    /// This was the last hold: the generation is over (the lock is free on the server
    /// once the release command lands).
    pub last: bool,
    /// Holds left.
    pub count: u32,
}

/// What the server said to a renewal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenewalOutcome {
    /// The lease was extended.
    Renewed,
    /// The server says this owner does not hold the lock.
    Refused,
    /// No answer (connection lost, timeout): unknown.
    Failed,
}

/// What the watchdog does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchdogStep {
    /// Schedule the next renewal.
    Continue,
    /// The generation is over (released): stop quietly.
    Stop,
    /// The lock was taken away while still held: stop and report lost ownership.
    Lost,
}

impl Default for HoldState {
    fn default() -> Self {
        Self::new()
    }
}

impl HoldState {
    /// No holds, generation 0.
    pub fn new() -> Self {
        HoldState {
            word: AtomicU64::new(0),
        }
    }

    /// Counts one more hold (after the server granted it).
    pub fn enter(&self) -> Entered {
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            let (g, c) = split(cur);
            let first = c == 0;
            let generation = if first { g.wrapping_add(1) } else { g };
            let count = c.saturating_add(1);
            match self.word.compare_exchange_weak(
                cur,
                join(generation, count),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Entered {
                        generation,
                        first,
                        count,
                    }
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Counts one hold less; `None` when there was none (an unmatched release, refused
    /// without touching the count).
    pub fn exit(&self) -> Option<Exited> {
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            let (g, c) = split(cur);
            if c == 0 {
                return None;
            }
            let count = c - 1;
            match self.word.compare_exchange_weak(
                cur,
                join(g, count),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Some(Exited {
                        generation: g,
                        last: count == 0,
                        count,
                    })
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Current holds.
    pub fn holds(&self) -> u32 {
        split(self.word.load(Ordering::Acquire)).1
    }

    /// Current generation (the last one started).
    pub fn generation(&self) -> u32 {
        split(self.word.load(Ordering::Acquire)).0
    }

    /// Whether the watchdog of `generation` may send a renewal now.
    pub fn may_renew(&self, generation: u32) -> bool {
        let (g, c) = split(self.word.load(Ordering::Acquire));
        g == generation && c > 0
    }

    /// The watchdog's next step after the server answered a renewal of `generation`.
    pub fn after_renewal(&self, generation: u32, outcome: RenewalOutcome) -> WatchdogStep {
        if !self.may_renew(generation) {
            // Released meanwhile: whatever the server said is about a hold that is over.
            return WatchdogStep::Stop;
        }
        match outcome {
            RenewalOutcome::Renewed | RenewalOutcome::Failed => WatchdogStep::Continue,
            RenewalOutcome::Refused => WatchdogStep::Lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_start_at_first_hold_and_end_at_last() {
        let s = HoldState::new();
        let a = s.enter();
        assert!(a.first && a.generation == 1);
        let b = s.enter();
        assert!(!b.first && b.count == 2);
        assert!(!s.exit().is_some_and(|e| e.last));
        assert!(s.may_renew(1));
        assert!(s.exit().is_some_and(|e| e.last));
        assert!(!s.may_renew(1));
        assert_eq!(s.exit(), None, "unmatched release is refused");
        assert_eq!(
            s.after_renewal(1, RenewalOutcome::Refused),
            WatchdogStep::Stop
        );
        assert_eq!(s.enter().generation, 2);
        assert_eq!(
            s.after_renewal(1, RenewalOutcome::Renewed),
            WatchdogStep::Stop
        );
        assert_eq!(
            s.after_renewal(2, RenewalOutcome::Refused),
            WatchdogStep::Lost
        );
    }
}
