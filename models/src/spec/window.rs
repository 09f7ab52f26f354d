//! Time as the specs take it: a window of instants, a single one in models, the
//! interval between an operation's call and its reply in histories; and what a
//! deadline that is itself a window says about whether something has run out.

/// A history's instant or duration, in nanoseconds, as reports write it: seconds to the
/// millisecond (`1.234s`), `∞` for "never".
pub fn fmt_time(ns: u64) -> String {
    if ns == u64::MAX {
        return "∞".to_string();
    }
    format!("{:.3}s", ns as f64 / 1e9)
}

/// A closed interval of instants, in whatever unit the caller uses consistently
/// (nanoseconds in histories, ticks in models).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window {
    /// The earliest instant.
    pub lo: u64,
    /// The latest instant (`>= lo`).
    pub hi: u64,
}

impl Window {
    /// A single instant.
    pub fn at(t: u64) -> Self {
        Window { lo: t, hi: t }
    }

    /// Every instant from `lo` to `hi`; the bounds are swapped if given backwards.
    pub fn between(lo: u64, hi: u64) -> Self {
        Window {
            lo: lo.min(hi),
            hi: lo.max(hi),
        }
    }

    /// The window shifted later by `d` (saturating: a deadline never wraps around).
    pub fn plus(self, d: u64) -> Self {
        Window {
            lo: self.lo.saturating_add(d),
            hi: self.hi.saturating_add(d),
        }
    }

    /// Read as a deadline: it has surely passed at instant `t` (every instant it may
    /// fall at is `t` or earlier).
    pub fn passed_by(self, t: u64) -> bool {
        self.hi <= t
    }

    /// Read as a deadline: it may have passed at some instant of `at`.
    pub fn may_pass_in(self, at: Window) -> bool {
        self.lo <= at.hi
    }
}

/// Whether what runs out at `deadline` (`None`: never) may still be live at some
/// instant of `at`: a lock's hold, a key's TTL.
pub fn maybe_live(deadline: Option<Window>, at: Window) -> bool {
    deadline.is_none_or(|d| !d.passed_by(at.lo))
}

/// Whether what runs out at `deadline` (`None`: never) may have run out at some
/// instant of `at`.
pub fn maybe_expired(deadline: Option<Window>, at: Window) -> bool {
    deadline.is_some_and(|d| d.may_pass_in(at))
}
