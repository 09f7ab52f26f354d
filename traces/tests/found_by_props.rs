//! Histories the property tests (spec_props, client_props) found judged wrongly,
//! reduced by hand to their core. Each was a correct run.

use crate::common::history_with as history;
use locklab_traces::check::{check_history, Options, Verdict};
use locklab_traces::format::Backend;
use locklab_traces::format::{Event, Header, LockModel, OpKind, Phase, Process};

fn ev(p: u32, op: OpKind, phase: Phase, time: u64) -> Event {
    Event::new(Process::Client(p), op, phase, time)
}

/// c0 holds Knossos's mutex; its second acquire waits, and times out. It never took
/// effect, as Knossos allows an `:info` not to; it was reported as an acquire of a held
/// mutex.
#[test]
fn a_mutex_acquire_that_timed_out_waiting_never_took_effect() {
    let mut header = Header::new("test", Backend::Simulated);
    header.lock = Some(LockModel::Mutex);
    let h = history(
        header,
        vec![
            ev(0, OpKind::Acquire, Phase::Invoke, 1),
            ev(0, OpKind::Acquire, Phase::Ok, 2),
            ev(1, OpKind::Acquire, Phase::Invoke, 3),
            ev(1, OpKind::Acquire, Phase::Info, 4),
        ],
    );
    let r = check_history(&h, &Options::default()).expect("checks");
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

/// An inventory read that crashed has no value; the history was refused as malformed
/// ("read needs an integer value").
#[test]
fn an_inventory_read_that_crashed_needs_no_value() {
    let mut header = Header::new("test", Backend::Simulated);
    header.resource = Some(locklab_traces::format::ResourceSpec::Inventory {
        initial: 1,
        writes_are_updates: false,
    });
    let h = history(
        header,
        vec![
            ev(0, OpKind::Read, Phase::Invoke, 1),
            ev(0, OpKind::Read, Phase::Info, 2),
            ev(1, OpKind::Read, Phase::Invoke, 3),
        ],
    );
    let r = check_history(&h, &Options::default()).expect("a crashed read is well-formed");
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

/// A Redis node: `SET lock c0 NX PX 10` ran at 2, `PTTL lock` at 6 and answered 6. The
/// spec predicted the lease left at the end of PTTL's window against the earliest
/// deadline (3) and demanded exactly that.
#[test]
fn a_redis_pttl_is_the_lease_left_at_some_instant_of_its_window() {
    use std::sync::Arc;

    use locklab_models::redis::spec::{RedisCommand, RedisReply, RedisSpec};
    use locklab_traces::check::linear::{check, LinOp, LinResult};

    let op = |input, output, call, ret| LinOp {
        spec: Arc::new(RedisSpec::default()),
        input,
        output: Some(output),
        call,
        ret: Some(ret),
        client: 0,
        line: 0,
    };
    let set = RedisCommand::Set {
        key: "lock".into(),
        value: "c0".into(),
        nx: true,
        px: Some(10),
    };
    let pttl = RedisCommand::PTtl { key: "lock".into() };
    let ops = vec![
        op(set, RedisReply::Ok, 0, 4),
        op(pttl, RedisReply::Integer(6), 5, 7),
    ];
    assert!(matches!(
        check(&[ops], &locklab_traces::check::linear::Budget::unlimited()),
        LinResult::Ok
    ));
}

/// c1's lease ran out and c0 was granted the lock; c1 asked for it again and timed out
/// (the acquire did take effect once c0's lease ran out), so it released to be safe, and
/// the release succeeded: it was c1's own hold. It was reported as a foreign release,
/// as if c1 had taken no grant since c0's.
#[test]
fn a_release_after_an_acquire_of_unknown_outcome_may_be_of_ones_own_hold() {
    let acquire = |p, phase, time| {
        let mut e = ev(p, OpKind::Acquire, phase, time);
        if phase == Phase::Invoke {
            e.lease_ns = Some(10);
        }
        e
    };
    let h = history(
        Header::new("test", Backend::Simulated),
        vec![
            acquire(1, Phase::Invoke, 0),
            acquire(1, Phase::Ok, 1),
            acquire(0, Phase::Invoke, 20),
            acquire(0, Phase::Ok, 21),
            acquire(1, Phase::Invoke, 22),
            acquire(1, Phase::Info, 23),
            ev(1, OpKind::Release, Phase::Invoke, 40),
            ev(1, OpKind::Release, Phase::Ok, 41),
        ],
    );
    let r = check_history(&h, &Options::default()).expect("checks");
    for c in &r.checks {
        // c0's belief that it still holds the lock at its last event is not the lock's.
        if c.property != locklab_traces::check::Property::MutualExclusion {
            assert_eq!(c.verdict, Verdict::Ok, "{c:#?}");
        }
    }
}

/// c0 holds lock b while c1 holds lock a: two locks, two critical sections. They were
/// reported as one critical section with two clients in it.
#[test]
fn holding_different_locks_at_once_is_no_overlap() {
    let acquire = |p, key: &str, phase, time| {
        let mut e = ev(p, OpKind::Acquire, phase, time);
        e.key = Some(key.into());
        e
    };
    let h = history(
        Header::new("test", Backend::Simulated),
        vec![
            acquire(0, "b", Phase::Invoke, 1),
            acquire(1, "a", Phase::Invoke, 2),
            acquire(1, "a", Phase::Ok, 3),
            acquire(0, "b", Phase::Ok, 4),
            acquire(1, "a", Phase::Invoke, 5),
        ],
    );
    let r = check_history(&h, &Options::default()).expect("checks");
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

/// Two products, each with 2 in stock: 2 sold of a, 1 of b. That was reported as 3 sold
/// from a stock of 2.
#[test]
fn each_key_of_an_inventory_is_a_stock_of_its_own() {
    let mut header = Header::new("test", Backend::Simulated);
    header.resource = Some(locklab_traces::format::ResourceSpec::Inventory {
        initial: 2,
        writes_are_updates: false,
    });
    let decrement = |key: &str, time| {
        let mut inv = ev(0, OpKind::Decrement, Phase::Invoke, time);
        inv.key = Some(key.into());
        [inv, ev(0, OpKind::Decrement, Phase::Ok, time + 1)]
    };
    let h = history(
        header,
        [decrement("a", 1), decrement("a", 3), decrement("b", 5)]
            .into_iter()
            .flatten()
            .collect(),
    );
    let r = check_history(&h, &Options::default()).expect("checks");
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

/// Two counters, each behind a lock of its own: c0 writes k0 with token 1 of lock k0,
/// then c1 writes k1 with token 1 of lock k1. That was "token 1 accepted from two
/// holders", as if both wrote one resource under one lock.
#[test]
fn each_key_is_fenced_on_its_own() {
    let write = |p, key: &str, time| {
        let mut inv = ev(p, OpKind::Write, Phase::Invoke, time);
        inv.key = Some(key.into());
        inv.value = Some(1.into());
        inv.token = Some(1);
        [inv, ev(p, OpKind::Write, Phase::Ok, time + 1)]
    };
    let h = history(
        Header::new("test", Backend::Simulated),
        [write(0, "k0", 1), write(1, "k1", 3)]
            .into_iter()
            .flatten()
            .collect(),
    );
    let r = check_history(&h, &Options::default()).expect("checks");
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}
