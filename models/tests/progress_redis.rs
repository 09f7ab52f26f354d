//! The progress promises on every Redis row: which rows break them, with what lasso,
//! and that no lease lock is ever called stuck because the model's clock stops.

use locklab_models::catalog::{self, Overrides};
use locklab_models::check::Limits;
use locklab_models::progress::{Kept, Lasso, Promise, Verdict};
use locklab_models::registry::Family;

fn verdicts(id: &str) -> Vec<Verdict> {
    catalog::progress(id, &Overrides::default(), Limits::default())
        .expect("a catalog row")
        .expect("the Redis family states its progress promises")
}

fn kept(id: &str, promise: Promise) -> Kept {
    verdicts(id)
        .into_iter()
        .find(|v| v.promise == promise)
        .map(|v| v.kept)
        .expect("every promise is judged")
}

fn lasso(id: &str, promise: Promise) -> Lasso {
    match kept(id, promise) {
        Kept::Violated { lasso } => *lasso,
        other => panic!("{id} keeps {promise}: {other:?}"),
    }
}

/// A lock without a TTL, its holder crashed: the waiter is stuck for good, and the
/// lasso shows the crash of the client that set the key, then a state where no step
/// is possible and no deadline is ahead.
#[test]
fn a_crashed_holders_key_without_ttl_is_never_free_again() {
    for id in ["redis-setnx-no-ttl", "redis-setnx-expire"] {
        let l = lasso(id, Promise::EventuallyFree);
        let crash = l
            .steps
            .iter()
            .position(|s| s.fault && s.action.contains("crashes"))
            .unwrap_or_else(|| panic!("{id}: the stem has the crash\n{l}"));
        assert!(crash < l.stem, "{id}: the crash is on the stem\n{l}");
        assert!(
            l.cycle().is_empty(),
            "{id}: a dead end, nothing can happen\n{l}"
        );
        let last = l.steps[l.stem - 1].state.join("\n");
        assert!(
            last.contains(&format!("c{}: acquiring", l.client)),
            "{id}: the waiter still waits at the knot\n{l}"
        );
        assert!(
            last.contains("CRASHED") && last.contains("(no TTL)"),
            "{id}:\n{l}"
        );
        assert!(
            l.closing.contains("nothing more can happen"),
            "{}",
            l.closing
        );
        assert!(l.to_string().contains("Lasso for eventually-free"));
    }
}

/// Every Redis row whose lock has a TTL on every path keeps both promises; the two
/// rows above break both; `redis-failover-wait` is undecided and says why: its model
/// holds the clock for a holder blocked in `WAIT` (a timelock), which proves nothing.
#[test]
fn every_redis_row_has_both_verdicts() {
    let stuck = ["redis-setnx-no-ttl", "redis-setnx-expire"];
    for s in catalog::scenarios()
        .into_iter()
        .filter(|s| s.family == Family::Redis)
    {
        for v in verdicts(s.id) {
            match (&v.kept, s.id) {
                (Kept::Violated { lasso }, id) if stuck.contains(&id) => {
                    assert!(lasso.stem > 0, "{id}");
                }
                (Kept::Unknown { why }, "redis-failover-wait")
                    if v.promise == Promise::StarvationFree =>
                {
                    assert!(why.contains("timelock"), "{why}");
                }
                (Kept::Holds, id) if !stuck.contains(&id) => {}
                (other, id) => panic!("{id} {}: {other:?}", v.promise),
            }
        }
    }
}

/// The tail that lets leases run out after the horizon is what keeps a lease lock from
/// looking stuck: a holder that crashes at the last instant faults may strike still
/// leaves a key that expires, and the waiter gets it.
#[test]
fn a_lease_lock_keeps_both_promises_with_a_crash_at_any_time() {
    let o = Overrides {
        faults: Some("crash=1".into()),
        ..Overrides::default()
    };
    let v = catalog::progress("redis-lua", &o, Limits::default())
        .expect("row")
        .expect("stated");
    assert!(v.iter().all(|v| matches!(v.kept, Kept::Holds)), "{v:#?}");
}

/// A graph held to fewer states than it has is undecided, not held.
#[test]
fn a_graph_cut_short_is_unknown() {
    let limits = Limits {
        max_states: 10,
        ..Limits::default()
    };
    let v = catalog::progress("redis-lua", &Overrides::default(), limits)
        .expect("row")
        .expect("stated");
    for v in v {
        match v.kept {
            Kept::Unknown { why } => assert!(why.contains("10 states"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
