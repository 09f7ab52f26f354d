//! loom model checks of the local hand-off queue (`RUSTFLAGS="--cfg loom"`): every
//! interleaving of a task arriving, the local owner leaving, and a waiter giving up or
//! going away. A grant stands in for the server's answer; it counts how often it is
//! dropped, which is how a grant nobody uses gets released.

use loom::future::block_on;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::handoff_queue::{HandOff, HandOffQueue};
use crate::sync::Arc;

struct Grant(Arc<AtomicUsize>);

impl Drop for Grant {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

type Queue = HandOffQueue<(), Grant>;

/// What a waiter came to.
#[derive(Debug, PartialEq)]
enum End {
    /// Its claim made it the local owner (nobody was on record).
    Owner,
    /// The leaving owner passed it the key.
    Passed,
    /// It was told to ask the server, as the new owner.
    Retry,
}

fn await_turn(q: &Arc<Queue>, me: &str) -> End {
    match q.claim(me, ()) {
        None => End::Owner,
        Some(ticket) => match block_on(ticket.turn()) {
            HandOff::Granted(_) => End::Passed,
            HandOff::Retry => End::Retry,
        },
    }
}

/// A task arrives while the holder releases: it is never left queued behind nobody,
/// and it ends as the one local owner either way.
#[test]
fn an_arriving_task_and_a_leaving_holder_never_lose_the_turn() {
    loom::model(|| {
        let q: Arc<Queue> = Arc::new(HandOffQueue::new());
        q.held_by("a");
        let drops = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let q = q.clone();
            thread::spawn(move || await_turn(&q, "b"))
        };
        let passed = match q.next_owner("a") {
            Some((handing, ())) => {
                assert!(handing
                    .deliver(HandOff::Granted(Grant(drops.clone())))
                    .is_ok());
                true
            }
            None => false,
        };
        let end = waiter.join().expect("join");
        assert_eq!(end, if passed { End::Passed } else { End::Owner });
        assert_eq!(q.holder().as_deref(), Some("b"));
        assert_eq!(drops.load(Ordering::SeqCst), usize::from(passed));
    });
}

/// A waiter withdraws (its patience ran out) while the holder picks it: either it left
/// before being picked and the holder frees the key, or it waits for and gets the grant.
/// The grant is used or released exactly once.
#[test]
fn a_withdrawing_waiter_and_a_picking_holder_agree() {
    loom::model(|| {
        let q: Arc<Queue> = Arc::new(HandOffQueue::new());
        q.held_by("a");
        let drops = Arc::new(AtomicUsize::new(0));
        let ticket = q.claim("b", ()).expect("queued behind a");
        let waiter = thread::spawn(move || match ticket.withdraw() {
            Ok(()) => false,
            Err(t) => matches!(block_on(t.turn()), HandOff::Granted(_)),
        });
        let picked = match q.next_owner("a") {
            Some((handing, ())) => {
                drop(handing.deliver(HandOff::Granted(Grant(drops.clone()))));
                true
            }
            None => false,
        };
        let got = waiter.join().expect("join");
        assert_eq!(got, picked, "withdrawn exactly when not picked");
        assert_eq!(drops.load(Ordering::SeqCst), usize::from(picked));
        let expected = if picked { Some("b") } else { None };
        assert_eq!(q.holder().as_deref(), expected);
    });
}

/// A waiter goes away (its acquire was dropped) while the holder passes it the key:
/// the grant comes back to the holder or dies with the ticket — released exactly once.
#[test]
fn a_grant_for_a_vanished_waiter_is_released_once() {
    loom::model(|| {
        let q: Arc<Queue> = Arc::new(HandOffQueue::new());
        q.held_by("a");
        let drops = Arc::new(AtomicUsize::new(0));
        let ticket = q.claim("b", ()).expect("queued behind a");
        let waiter = thread::spawn(move || drop(ticket));
        if let Some((handing, ())) = q.next_owner("a") {
            drop(handing.deliver(HandOff::Granted(Grant(drops.clone()))));
            waiter.join().expect("join");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        } else {
            waiter.join().expect("join");
            assert_eq!(drops.load(Ordering::SeqCst), 0);
            assert_eq!(q.holder(), None);
        }
    });
}

/// The local owner gives up while the first waiter vanishes: the turn to ask the server
/// skips it and reaches the next waiter.
#[test]
fn giving_up_skips_a_vanished_waiter() {
    loom::model(|| {
        let q: Arc<Queue> = Arc::new(HandOffQueue::new());
        q.held_by("a");
        let b = q.claim("b", ()).expect("b queued");
        let c = q.claim("c", ()).expect("c queued");
        let vanish = thread::spawn(move || drop(b));
        q.give_up("a");
        vanish.join().expect("join");
        assert!(matches!(block_on(c.turn()), HandOff::Retry));
        assert_eq!(q.holder().as_deref(), Some("c"));
        assert!(q.is_empty());
    });
}
