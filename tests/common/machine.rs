//! The machine shared between the tests' real runs: a run takes a share, a test that
//! looks at the whole machine (what runs left behind, a harness it kills) takes all of
//! it. No row needs both cores to itself at four shares: the day one does, it gets
//! `alone()` with the reason beside it.

use std::sync::{Condvar, Mutex};

/// How many runs share the machine at once. A run mostly waits (on leases, faults and
/// its servers' replies): the root test binary's tests used 1.1 cores of two on
/// average with four shares and six test threads, so six runs side by side keep their
/// fault timing, also beside another build. What a loaded machine delays is timed by
/// events, not the clock: a fault waits for the grant or the key it needs, and a holder
/// waiting for the overlap a failover lets in keeps the run going until it comes
/// (`jepsen-like/src/workload.rs`, `stay_for_overlap`). The binary runs nine tests at
/// a time (`tests/main.rs`), so model tests go on beside the runs.
const SHARES: usize = 6;

/// The shares taken, and how many wait for the whole machine.
struct Taken {
    shares: usize,
    whole_wanted: usize,
}

static MACHINE: (Mutex<Taken>, Condvar) = (
    Mutex::new(Taken {
        shares: 0,
        whole_wanted: 0,
    }),
    Condvar::new(),
);

/// A part of the machine held by one run (or by a test that looks at the whole
/// machine): given back when dropped, also by a test that panicked holding it.
pub struct Share(usize);

impl Share {
    fn take(n: usize) -> Share {
        let (taken, freed) = &MACHINE;
        let mut t = taken.lock().unwrap_or_else(|p| p.into_inner());
        let whole = n == SHARES;
        if whole {
            t.whole_wanted += 1;
        }
        // A test waiting for the whole machine goes first: runs that keep coming
        // would otherwise never leave it empty.
        while t.shares + n > SHARES || (!whole && t.whole_wanted > 0) {
            t = freed.wait(t).unwrap_or_else(|p| p.into_inner());
        }
        if whole {
            t.whole_wanted -= 1;
        }
        t.shares += n;
        Share(n)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let (taken, freed) = &MACHINE;
        let mut t = taken.lock().unwrap_or_else(|p| p.into_inner());
        t.shares -= self.0;
        freed.notify_all();
    }
}

/// The whole machine: no run beside it. For a test that counts what runs left behind
/// on the machine.
pub fn alone() -> Share {
    Share::take(SHARES)
}

/// One run's part of the machine.
pub fn beside() -> Share {
    Share::take(1)
}

/// `f` on each of `items`, side by side, each on its own thread (a run takes its share
/// of the machine itself); the results in `items`' order. A panic in one is the test's.
pub fn side_by_side<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    std::thread::scope(|s| {
        let handles: Vec<_> = items.iter().map(|i| s.spawn(|| f(i))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
