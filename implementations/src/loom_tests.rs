//! loom model checks of the client-side state (`RUSTFLAGS="--cfg loom"`): every
//! interleaving of hold counting, release and the watchdog's renewal decisions, with a
//! tiny stand-in for the server's conditional scripts (the renew script only extends a
//! lock its owner holds; the release deletes it).

use loom::thread;

use crate::hold_state::{HoldState, RenewalOutcome, WatchdogStep};
use crate::sync::{Arc, Mutex};

/// The server's view of one owner's lock: held or not (the scripts are atomic, so a
/// mutex is an exact model of them).
#[derive(Default)]
struct Server {
    held: bool,
    renewals_after_release: u32,
    released: bool,
}

impl Server {
    fn grant(&mut self) {
        self.held = true;
        self.released = false;
    }

    /// `hash-renew` / compare-and-pexpire: conditional on ownership.
    fn renew(&mut self) -> RenewalOutcome {
        if self.released {
            self.renewals_after_release += 1;
        }
        if self.held {
            RenewalOutcome::Renewed
        } else {
            RenewalOutcome::Refused
        }
    }

    fn release(&mut self) {
        self.held = false;
        self.released = true;
    }
}

/// One watchdog tick as `watchdog.rs` runs it: check, renew, decide.
fn tick(state: &HoldState, server: &Mutex<Server>, generation: u32) -> WatchdogStep {
    if !state.may_renew(generation) {
        return WatchdogStep::Stop;
    }
    let outcome = server.lock().expect("server").renew();
    state.after_renewal(generation, outcome)
}

/// Two tasks of one owner enter and leave concurrently: the count stays exact, every
/// generation starts once and ends once.
#[test]
fn hold_counts_are_exact_under_concurrent_enter_and_exit() {
    loom::model(|| {
        let state = Arc::new(HoldState::new());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let s = state.clone();
                thread::spawn(move || {
                    let e = s.enter();
                    let x = s.exit().expect("a hold to give back");
                    (e.first, x.last)
                })
            })
            .collect();
        let mut firsts = 0;
        let mut lasts = 0;
        for h in handles {
            let (f, l) = h.join().expect("join");
            firsts += u32::from(f);
            lasts += u32::from(l);
        }
        assert_eq!(state.holds(), 0);
        assert_eq!(firsts, lasts, "every generation that starts ends");
        assert_eq!(state.generation(), firsts);
        assert_eq!(state.exit(), None, "no hold left to release");
    });
}

/// The watchdog races the release. A renewal may still reach the server after the
/// release (it was started before), but it is conditional, so the lock stays released;
/// the watchdog stops; and the race is never mistaken for lost ownership.
#[test]
fn a_renewal_racing_release_never_resurrects_the_lock() {
    loom::model(|| {
        let state = Arc::new(HoldState::new());
        let server = Arc::new(Mutex::new(Server::default()));
        server.lock().expect("server").grant();
        let generation = state.enter().generation;

        let watchdog = {
            let (state, server) = (state.clone(), server.clone());
            thread::spawn(move || {
                let mut steps = Vec::new();
                for _ in 0..2 {
                    let step = tick(&state, &server, generation);
                    steps.push(step);
                    if step != WatchdogStep::Continue {
                        break;
                    }
                }
                steps
            })
        };
        // The release, in the order `LockGuard::release` uses: count first, then server.
        let exited = state.exit().expect("held");
        assert!(exited.last);
        server.lock().expect("server").release();

        let steps = watchdog.join().expect("join");
        assert!(
            !steps.contains(&WatchdogStep::Lost),
            "release mistaken for loss: {steps:?}"
        );
        assert!(!server.lock().expect("server").held, "resurrected");
        assert!(
            !state.may_renew(generation),
            "the watchdog would renew again"
        );
        // At most the one renewal already past its check can land after the release.
        assert!(server.lock().expect("server").renewals_after_release <= 1);
    });
}

/// Release and an immediate re-acquire by the same owner while the old generation's
/// watchdog is mid-renewal: the old watchdog stops, only the new generation renews.
#[test]
fn an_old_watchdog_stops_when_the_owner_reacquires() {
    loom::model(|| {
        let state = Arc::new(HoldState::new());
        let server = Arc::new(Mutex::new(Server::default()));
        server.lock().expect("server").grant();
        let old = state.enter().generation;

        let watchdog = {
            let (state, server) = (state.clone(), server.clone());
            thread::spawn(move || tick(&state, &server, old))
        };
        assert!(state.exit().expect("held").last);
        server.lock().expect("server").release();
        server.lock().expect("server").grant();
        let new = state.enter();
        assert!(new.first && new.generation != old);

        let step = watchdog.join().expect("join");
        assert_ne!(step, WatchdogStep::Lost);
        assert_eq!(
            tick(&state, &server, old),
            WatchdogStep::Stop,
            "old generation is over"
        );
        assert_eq!(
            tick(&state, &server, new.generation),
            WatchdogStep::Continue
        );
    });
}

/// A lock really taken away (deleted by someone else) while held is reported lost.
#[test]
fn a_lock_taken_away_while_held_is_reported_lost() {
    loom::model(|| {
        let state = Arc::new(HoldState::new());
        let server = Arc::new(Mutex::new(Server::default()));
        server.lock().expect("server").grant();
        let generation = state.enter().generation;
        let thief = {
            let server = server.clone();
            thread::spawn(move || server.lock().expect("server").release())
        };
        thief.join().expect("join");
        assert_eq!(tick(&state, &server, generation), WatchdogStep::Lost);
        assert_eq!(
            state.holds(),
            1,
            "the holder still counts its hold until it releases"
        );
    });
}

/// The checks have teeth: releasing on the server *before* counting the release lets
/// some interleaving report the clean release as lost ownership — which is why
/// `LockGuard::release` counts first.
#[test]
fn server_first_release_order_is_caught() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static FALSE_ALARM: AtomicBool = AtomicBool::new(false);
    loom::model(|| {
        let state = Arc::new(HoldState::new());
        let server = Arc::new(Mutex::new(Server::default()));
        server.lock().expect("server").grant();
        let generation = state.enter().generation;
        let watchdog = {
            let (state, server) = (state.clone(), server.clone());
            thread::spawn(move || tick(&state, &server, generation))
        };
        server.lock().expect("server").release();
        let _ = state.exit();
        if watchdog.join().expect("join") == WatchdogStep::Lost {
            FALSE_ALARM.store(true, Ordering::SeqCst);
        }
    });
    assert!(
        FALSE_ALARM.load(Ordering::SeqCst),
        "loom must find the bad interleaving"
    );
}
