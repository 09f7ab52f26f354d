//! The progress promises on the catalog's rows: which rows break them, with what
//! lasso, and that no lease lock is ever called stuck because the model's clock stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use locklab_models::catalog::{self, Overrides};
use locklab_models::check::Limits;
use locklab_models::progress::{Kept, Lasso, Promise, Verdict};
use locklab_models::registry::{Family, ScenarioId};

/// Every row's verdicts at its default bounds, judged once for all the tests here:
/// each judges every row, and the graphs with clients that start over are the
/// slowest part of the suite. A test that asks for a row another is judging waits
/// for that answer rather than judge it again beside it.
fn verdicts(id: &str) -> Vec<Verdict> {
    type Cell = Arc<OnceLock<Vec<Verdict>>>;
    static ALL: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell = ALL
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        catalog::progress(row(id), &Overrides::default(), Limits::default())
            .expect("a catalog row")
            .expect("the row's family states its progress promises")
    })
    .clone()
}

/// The catalog's row of `id`.
fn row(id: &str) -> &'static catalog::Scenario {
    catalog::find(id).expect("a catalog row")
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

/// The rows whose lock a fault can wedge for good, and the words of the fault.
const STUCK: &[(&str, &str)] = &[
    ("redis-setnx-no-ttl", "crashes"),
    ("redis-setnx-expire", "crashes"),
    ("mysql-unique-crash", "crashes"),
    ("mysql-unique-reaper-dies", "crashes"),
    ("zk-create-conn-loss", "reply lost"),
    ("redis-reentrant-hung", "worker hangs"),
    ("etcd-hung-worker", "worker hangs"),
    ("zk-hung-worker", "worker hangs"),
    ("mysql-getlock-hung", "worker hangs"),
];

/// A lock a fault left held for good: the eventually-free lasso's stem has the fault,
/// then the waiter reaches a state where no step is possible and no deadline is ahead
/// (a dead end, the cycle empty). Starvation, judged with clients that start over,
/// is broken there too.
#[test]
fn a_wedged_lock_is_never_free_again() {
    for (id, fault) in STUCK {
        let l = lasso(id, Promise::EventuallyFree);
        let at = l
            .steps
            .iter()
            .position(|s| s.fault && s.action.contains(fault))
            .unwrap_or_else(|| panic!("{id}: the stem has the fault\n{l}"));
        assert!(at < l.stem, "{id}: the fault is on the stem\n{l}");
        assert!(l.cycle().is_empty(), "{id}: a dead end\n{l}");
        assert!(
            l.closing.contains("nothing more can happen"),
            "{}",
            l.closing
        );
        assert!(l.to_string().contains("Lasso for eventually-free"));
        assert!(
            matches!(kept(id, Promise::StarvationFree), Kept::Violated { .. }),
            "{id}"
        );
    }
    let l = lasso("redis-setnx-no-ttl", Promise::EventuallyFree);
    let last = l.steps[l.stem - 1].state.join("\n");
    assert!(
        last.contains(&format!("c{}: acquiring", l.client)),
        "the waiter still waits at the knot\n{l}"
    );
    assert!(last.contains("CRASHED") && last.contains("(no TTL)"), "{l}");
    assert!(
        l.closing.contains("A fault struck (step 2: c1 crashes)"),
        "{}",
        l.closing
    );
}

/// The rows whose lock keeps no order among its waiters and still starves none: each
/// client of `redis-reentrant-thread-id` writes the same thread id, so it re-enters
/// whatever hold it finds and is never refused; `redis-failover-wait`'s clients lock
/// once (`WAIT`'s count of a replica's unapplied writes grows with every round, which
/// the repeating model does not store).
const NEVER_REFUSED: &[&str] = &["redis-reentrant-thread-id", "redis-failover-wait"];

/// Starvation, judged with clients that lock again and again: a lock that queues its
/// waiters and grants them in order (ZooKeeper's sequential nodes, etcd's revisions,
/// InnoDB's and PostgreSQL's lock queues) starves nobody unless a fault wedges it; a
/// lock that keeps no order (a retry loop on one key, a plain znode, Redlock, a lease
/// row, `GET_LOCK(?, 0)`, the application's own mutex) lets one client ask for ever
/// while another takes it again and again. Every broken verdict is such a round: the
/// starving client never holds in the cycle, and another is granted in it.
#[test]
fn starvation_is_broken_exactly_where_the_lock_keeps_no_order() {
    let mut broken = 0;
    for s in catalog::scenarios() {
        if s.family == Family::Inventory || s.id.name() == "pg-advisory-pool" {
            continue;
        }
        let all = verdicts(s.id.name());
        let ordered = all.iter().any(|v| v.promise == Promise::Fifo);
        let starving = all
            .iter()
            .find(|v| v.promise == Promise::StarvationFree)
            .expect("judged");
        assert_eq!(
            starving.repeating,
            s.id.name() != "redis-failover-wait",
            "{}: judged with clients that start over",
            s.id.name()
        );
        let stuck = STUCK.iter().any(|(id, _)| *id == s.id.name());
        let expect_broken = stuck || !(ordered || NEVER_REFUSED.contains(&s.id.name()));
        match (&starving.kept, expect_broken) {
            (Kept::Holds, false) => {}
            (Kept::Violated { lasso }, true) => {
                broken += 1;
                if stuck {
                    continue;
                }
                assert!(
                    !lasso.cycle().is_empty(),
                    "{}: a round\n{lasso}",
                    s.id.name()
                );
                assert!(
                    lasso.closing.contains("takes the lock again and again")
                        || lasso.closing.contains("take turns with it"),
                    "{}: {}",
                    s.id.name(),
                    lasso.closing
                );
                let me = format!("c{}:", lasso.client);
                for st in lasso.cycle() {
                    let line = st.state.iter().find(|l| l.starts_with(&me));
                    assert!(
                        line.is_some_and(|l| !l.contains("IN CRITICAL SECTION")),
                        "{}: the starving client never enters\n{lasso}",
                        s.id.name()
                    );
                }
            }
            (other, _) => panic!("{}: starvation-free {other:?}", s.id.name()),
        }
    }
    assert!(broken >= 40, "{broken} rows break starvation-freedom");
}

/// The classic retry loop's starvation, told: on `redis-lua` c1 takes the lock, lets it
/// go and takes it again, for ever, while c0's `SET NX` could succeed only in the
/// moments between — which weak fairness does not owe it.
#[test]
fn a_retry_loop_starves_a_client_while_another_takes_turns() {
    let l = lasso("redis-lua", Promise::StarvationFree);
    assert_eq!(l.client, 0);
    let cycle: Vec<&str> = l.cycle().iter().map(|s| s.action.as_str()).collect();
    assert!(
        cycle
            .iter()
            .any(|a| a.starts_with("c1: SET lock c1 NX PX") && a.ends_with("OK")),
        "{l}"
    );
    assert!(
        cycle.iter().any(|a| a.contains("compare-and-delete")),
        "{l}"
    );
    assert!(cycle.contains(&"c1 asks for the lock again"), "{l}");
    assert!(!cycle.iter().any(|a| a.starts_with("c0")), "{l}");
    assert!(
        l.closing
            .contains("weak fairness owes a step only when it stays possible"),
        "{}",
        l.closing
    );
    // The queue that keeps the sequential recipe fair: the same promise holds there.
    assert!(matches!(
        kept("zk-sequential", Promise::StarvationFree),
        Kept::Holds
    ));
}

/// Every row of the lock families has both verdicts: the stuck rows break
/// eventually-free, every other lock keeps it, but the pooled row, which the model
/// cannot judge faithfully, undecided with the reason (starvation has its own test
/// above).
#[test]
fn every_row_has_both_verdicts() {
    for s in catalog::scenarios() {
        if s.family == Family::Inventory {
            continue;
        }
        let stuck = STUCK.iter().any(|(id, _)| *id == s.id.name());
        let v = verdicts(s.id.name());
        assert!(
            v.iter().any(|v| v.promise == Promise::StarvationFree),
            "{}",
            s.id.name()
        );
        match (&kept(s.id.name(), Promise::EventuallyFree), s.id.name()) {
            (Kept::Violated { .. }, _) if stuck => {}
            (Kept::Unknown { why }, "pg-advisory-pool") => {
                assert!(why.contains("pool"), "{why}");
            }
            (Kept::Holds, _) if !stuck => {}
            (other, id) => panic!("{id} eventually-free: {other:?}"),
        }
    }
}

/// The tail that lets leases run out after the horizon is what keeps a lease lock from
/// looking stuck: a holder that crashes at the last instant faults may strike still
/// leaves a key that expires, and the waiter gets it. (Starvation is broken there, by
/// the retry loop, not the crash: see above.)
#[test]
fn a_lease_lock_keeps_both_promises_with_a_crash_at_any_time() {
    let o = Overrides {
        faults: Some("crash=1".into()),
        ..Overrides::default()
    };
    let v = catalog::progress(row("redis-lua"), &o, Limits::default())
        .expect("row")
        .expect("stated");
    let free = v.iter().find(|v| v.promise == Promise::EventuallyFree);
    assert!(
        free.is_some_and(|v| matches!(v.kept, Kept::Holds)),
        "{v:#?}"
    );
}

/// A graph held to fewer states than it has is undecided, not held.
#[test]
fn a_graph_cut_short_is_unknown() {
    let limits = Limits {
        max_states: 10,
        ..Limits::default()
    };
    let v = catalog::progress(row("redis-lua"), &Overrides::default(), limits)
        .expect("row")
        .expect("stated");
    for v in v {
        match v.kept {
            Kept::Unknown { why } => assert!(why.contains("state limit"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}

/// The old state predicate (`liveness`: a lock that nothing will free while a client
/// waits) and the temporal promise agree on every row: a row breaks `liveness` exactly
/// when it breaks eventually-free — but the pooled row, where the predicate calls the
/// lock stuck and the graph cannot judge (see above).
#[test]
fn the_liveness_predicate_and_eventually_free_agree_on_every_row() {
    use locklab_models::catalog::Verdict as Safety;
    use locklab_models::registry::Property;
    for s in catalog::scenarios() {
        if s.family == Family::Inventory || s.id.name() == "pg-advisory-pool" {
            continue;
        }
        let report =
            catalog::check(s, &Overrides::default(), Limits::default(), &mut |_| {}).expect("row");
        let predicate =
            matches!(&report.verdict, Safety::Violated(p) if p.contains(&Property::Liveness));
        let promise = matches!(
            kept(s.id.name(), Promise::EventuallyFree),
            Kept::Violated { .. }
        );
        assert_eq!(predicate, promise, "{}", s.id.name());
    }
}

/// FIFO is judged where the protocol orders its requests — every ZooKeeper row with
/// sequential nodes, the etcd rows that wait by create revision, and the SQL locks
/// whose statements wait in the server's queue (`SELECT … FOR UPDATE`, PostgreSQL's
/// advisory locks) — and holds on each: the lowest request owns, a request whose node
/// or key is gone no longer counts, the queue grants its first. Rows without an order
/// (retry loops, one key or one plain znode, `GET_LOCK(?, 0)`, the application's own
/// mutex) are not judged.
#[test]
fn fifo_is_judged_where_requests_are_ordered_and_holds_there() {
    for s in catalog::scenarios() {
        if s.family == Family::Inventory {
            continue;
        }
        let fifo = verdicts(s.id.name())
            .into_iter()
            .find(|v| v.promise == Promise::Fifo);
        let sql_queue = ["sql-for-update", "pg-advisory"]
            .iter()
            .any(|p| s.id.name().starts_with(p))
            && s.id.name() != "pg-advisory-pool";
        let ordered = (s.family == Family::Zk && s.id.name() != ScenarioId::ZkPlainZnode.name())
            || (s.family == Family::Etcd && !s.id.name().starts_with("etcd-unlock-retry"))
            || sql_queue;
        match fifo {
            Some(v) if ordered => assert!(matches!(v.kept, Kept::Holds), "{}: {v:?}", s.id.name()),
            None if !ordered => {}
            other => panic!("{}: {other:?}", s.id.name()),
        }
    }
}

/// The graph is built on every thread the limits allow, and numbered in one order:
/// the same graph, verdicts and lassos on one thread as on two, on a row whose levels
/// are wide enough to be shared out.
#[test]
fn threads_change_nothing() {
    let o = Overrides {
        clients: Some(4),
        ttl: Some(6),
        faults: Some("crash=2".to_string()),
        ..Overrides::default()
    };
    let on = |threads: usize| {
        let limits = Limits {
            threads,
            ..Limits::default()
        };
        catalog::progress(row("redis-setnx-expire"), &o, limits)
            .expect("row")
            .expect("stated")
    };
    let (one, two) = (on(1), on(2));
    assert!(one[0].graph.expect("built").states > 50_000);
    // The row wedges: the lassos compared below are real ones, with the crash.
    match &one[0].kept {
        Kept::Violated { lasso } => {
            assert!(lasso.steps[..lasso.stem].iter().any(|s| s.fault), "{lasso}")
        }
        other => panic!("eventually-free: {other:?}"),
    }
    for (a, b) in one.iter().zip(&two) {
        let (ga, gb) = (a.graph.expect("built"), b.graph.expect("built"));
        assert_eq!((ga.states, ga.edges), (gb.states, gb.edges));
        match (&a.kept, &b.kept) {
            (Kept::Violated { lasso: x }, Kept::Violated { lasso: y }) => {
                assert_eq!(x.to_string(), y.to_string());
            }
            (x, y) => assert_eq!(format!("{x:?}"), format!("{y:?}")),
        }
    }
}

/// The old state predicate `liveness` ("a lock that nothing will free while a client
/// waits") and the temporal `eventually-free` give the same answer on every row that
/// states the predicate, at the default bounds: the predicate is kept (its verdict is
/// in the catalog and the history checks) only because the two never disagree.
#[test]
fn the_old_liveness_predicate_equals_eventually_free_on_every_row() {
    use locklab_models::registry::Property;
    let mut compared = Vec::new();
    for s in catalog::scenarios() {
        if !s.properties.contains(&Property::Liveness) {
            continue;
        }
        let report = catalog::check(s, &Overrides::default(), Limits::default(), &mut |_| {})
            .expect("a catalog row");
        let predicate = match &report.verdict {
            catalog::Verdict::Holds => false,
            catalog::Verdict::Violated(p) => p.contains(&Property::Liveness),
            catalog::Verdict::Unknown => panic!("{}: no safety verdict", s.id.name()),
        };
        let temporal = match kept(s.id.name(), Promise::EventuallyFree) {
            Kept::Holds => false,
            Kept::Violated { .. } => true,
            Kept::Unknown { why } => {
                // An undecided promise cannot contradict the predicate, nor confirm it.
                compared.push(format!("{} unknown ({why})", s.id.name()));
                continue;
            }
        };
        assert_eq!(
            predicate,
            temporal,
            "{}: the liveness predicate says {}, eventually-free says {}",
            s.id.name(),
            if predicate { "violated" } else { "holds" },
            if temporal { "broken" } else { "kept" }
        );
        compared.push(format!(
            "{} {}",
            s.id.name(),
            if temporal { "broken" } else { "kept" }
        ));
    }
    // Nine rows state it: the four stuck ones, and the crash rows of the lease and
    // session locks.
    assert!(compared.len() >= 9, "{compared:?}");
    let broken: Vec<&String> = compared.iter().filter(|c| c.ends_with("broken")).collect();
    assert_eq!(broken.len(), STUCK.len(), "{broken:?}");
}

/// Every row whose clients start over stores its states rebased (its clock moved back,
/// its counters renumbered, what nobody reads again dropped): on random walks far past
/// the horizon, each state met has the same steps as the form the graph stores, so
/// the starving lassos the graph proves are behaviours of the model, and the cycles
/// it misses are none.
#[test]
fn rebased_states_keep_every_future() {
    let mut rows = 0;
    for s in catalog::scenarios() {
        let Some(again) = s.model.repeating(s, &s.defaults) else {
            continue;
        };
        let compared = again
            .reduce_commutes(40, 150, 0x5eed)
            .unwrap_or_else(|e| panic!("{}: {e}", s.id.name()));
        assert!(compared > 100, "{}: only {compared} states", s.id.name());
        rows += 1;
    }
    assert!(rows >= 25, "{rows} rows start over");
}
