//! Clients that lock again and again, and time counted from now: what a model needs so
//! that starvation — one client asking for ever while the others take turns — is a
//! cycle the progress search can find and prove.
//!
//! A client that locks once cannot be starved by others that lock again; and a clock
//! that only counts up makes every state new, so no behaviour closes into a cycle. A
//! model checked for starvation therefore lets its finished clients start over, and
//! lets its clock run for ever past its horizon (faults over), storing each state
//! *rebased*: the clock moved back to the horizon and every instant the state holds
//! moved back as far ([`Rebase`]). Counters that only grow — fencing tokens, zxids,
//! revisions, sequence numbers, the protected counter — are renumbered by rank
//! ([`Ranks`]) or moved down together ([`crate::resource::Resource::rebase`]). Two
//! states with one rebased form have the same futures, step for step, which
//! [`crate::progress::reduce_commutes`] checks on each family's rows.

use super::Budget;
use crate::registry::Fault;

/// A tail without end: past its horizon, the clock of a model whose clients start over
/// runs for ever ([`super::time::stop`]), and the model stores its states rebased.
pub const FOR_EVER: u64 = u64::MAX / 4;

/// The horizon of a model whose clients start over, where a row's is `horizon`: faults
/// strike before it; with no fault to strike, time is counted from now from the
/// start, so that a starving cycle needs no stem of ticks to reach it.
pub fn horizon(faults: &Budget, horizon: u64) -> u64 {
    if faults.any(Fault::ALL) {
        horizon
    } else {
        0
    }
}

/// Whether a finished client asks for the lock again at `now`: where clients start
/// over (`repeat`), once the faults are over at `horizon`. Before, each locks once, as
/// in every other check: the bound that keeps the faults' part of the graph finite.
pub fn starts_over(repeat: bool, now: u64, horizon: u64) -> bool {
    repeat && now >= horizon
}

/// Moves a state's instants back so that its clock reads the horizon: past the horizon
/// only differences of instants are read (faults are over), so the moved state has the
/// same futures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebase {
    by: u64,
    now: u64,
}

impl Rebase {
    /// The rebase of a state whose clock reads `now` to `floor`, which is at least the
    /// model's horizon (faults strike at absolute instants before it) and at least the
    /// longest age the model reads of an instant (so every age still read fits below
    /// the moved clock): `None` before the floor.
    pub fn past(floor: u64, now: u64) -> Option<Rebase> {
        (now >= floor).then(|| Rebase {
            by: now - floor,
            now: floor,
        })
    }

    /// No move at all, at `now`: before the horizon, where a state's instants stay as
    /// they are but what has passed may still be folded ([`Rebase::deadline`]).
    pub fn stay(now: u64) -> Rebase {
        Rebase { by: 0, now }
    }

    /// The clock after the move: the horizon.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// A deadline after the move. One that has passed reads as any other that has (a
    /// model asks only whether it is due or past), so it is stored as the clock.
    pub fn deadline(&self, d: u64) -> u64 {
        d.saturating_sub(self.by).max(self.now)
    }

    /// An instant in the past that is read only as an age of at most `reach` ticks
    /// (when a cut began, against Sentinel's down-after): an older one is stored as
    /// `reach` ticks ago, which every such reading takes the same way.
    pub fn since(&self, t: u64, reach: u64) -> u64 {
        t.saturating_sub(self.by)
            .max(self.now.saturating_sub(reach))
    }

    /// An instant moved exactly, neither clamped nor aged: for a value the model
    /// compares with others of its kind.
    pub fn exact(&self, t: u64) -> u64 {
        t.saturating_sub(self.by)
    }
}

/// An order-preserving renumbering of a counter's values that keeps every step of one
/// between them: values one apart stay one apart, values further apart become two
/// apart, so an `INCR`, a zxid's or a revision's next value lands where it did among
/// the others, while a counter that only grows stays small. Values below `first` (a
/// "none yet" 0) are kept; `first - 1` counts as a value, so a first value of `first`
/// stays `first`.
#[derive(Clone, Debug, Default)]
pub struct Ranks(Vec<(u64, u64)>);

impl Ranks {
    /// The renumbering of `values`, counted from `first`.
    pub fn of(values: impl IntoIterator<Item = u64>, first: u64) -> Ranks {
        let mut seen: Vec<u64> = values.into_iter().filter(|&v| v >= first).collect();
        seen.sort_unstable();
        seen.dedup();
        let floor = first.saturating_sub(1);
        let (mut prev, mut prev_new) = (floor, floor);
        let map = seen
            .into_iter()
            .map(|v| {
                prev_new += (v - prev).min(2);
                prev = v;
                (v, prev_new)
            })
            .collect();
        Ranks(map)
    }

    /// The plain ranks of `values` from `first` on (values below `first` kept): for a
    /// counter whose values are only compared, and whose next value is always one past
    /// the greatest (a zxid, a revision, a sequence number, a session or lease id), so
    /// it lands past every renumbered one as it did.
    pub fn dense(values: impl IntoIterator<Item = u64>, first: u64) -> Ranks {
        let mut seen: Vec<u64> = values.into_iter().filter(|&v| v >= first).collect();
        seen.sort_unstable();
        seen.dedup();
        Ranks(seen.into_iter().zip(first..).collect())
    }

    /// `v`'s new number.
    pub fn get(&self, v: u64) -> u64 {
        // Sorted by old value: a handful of values, searched without a map's
        // allocations (a renumbering is made for every state a repeating search stores).
        self.0
            .binary_search_by_key(&v, |&(old, _)| old)
            .map_or(v, |i| self.0[i].1)
    }

    /// Whether every value keeps its number: the state need not be rewritten (most
    /// successors of a renumbered state are renumbered already).
    pub fn is_identity(&self) -> bool {
        self.0.iter().all(|&(old, new)| old == new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rebase_keeps_what_is_ahead_and_folds_what_has_passed() {
        assert_eq!(Rebase::past(5, 4), None, "before the horizon");
        let r = Rebase::past(5, 9).expect("past the horizon");
        assert_eq!(r.now(), 5);
        assert_eq!(r.deadline(11), 7, "two ticks ahead stays two ahead");
        assert_eq!(r.deadline(9), 5);
        assert_eq!(r.deadline(3), 5, "a passed deadline reads as now");
        assert_eq!(r.since(8, 2), 4);
        assert_eq!(r.since(1, 2), 3, "older than the reach: the reach");
        assert_eq!(r.exact(7), 3);
    }

    #[test]
    fn ranks_keep_order_and_none() {
        let r = Ranks::of([0, 17, 9, 18, 17, 40], 1);
        assert_eq!(
            (r.get(0), r.get(9), r.get(17), r.get(18), r.get(40)),
            (0, 2, 4, 5, 7),
            "0 (no token) stays; 17 and 18 stay one apart, others two"
        );
        assert_eq!(r.get(5), 5, "a value not seen");
        let r = Ranks::of([1, 2, 5], 1);
        assert_eq!(
            (r.get(1), r.get(2), r.get(5)),
            (1, 2, 4),
            "a first 1 stays 1"
        );
    }
}
