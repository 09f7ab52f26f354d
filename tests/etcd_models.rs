//! The etcd lock rows through the catalog: each verdict, what each counterexample shows
//! (the requests, the fault, the lease that expired and who ends up inside), and for the
//! rows that hold, the variant that breaks and the path that shows the lock freed.
#![cfg(feature = "model-check")]

use locklab_models::catalog::{Family, Verdict};
use locklab_models::checkable::Story;
use locklab_models::etcd::{Action, EtcdLock, EtcdLockModel, EtcdLockState, Lock, Phase, Work};
use locklab_models::registry::{Fault, Property};
use locklab_models::scenario::Params;
use stateright::Model;

use crate::common::models;
use models::{
    assert_before, assert_family_rows, assert_fencing_saves_only_the_resource, assert_two_inside,
    inside, last_state, one, run, stories, story, text,
};

/// A variant of a row, searched directly: its stories by property.
fn variant(lock: Lock, work: Work, properties: &'static [Property], p: &Params) -> Vec<Story> {
    stories(
        &EtcdLock::new(lock, work).model(properties, p),
        (lock, work),
    )
}

/// Takes `actions` in order from the model's initial state; each must be enabled.
fn walk(m: &EtcdLockModel, actions: &[Action]) -> EtcdLockState {
    models::walk(m, actions).0
}

const RES: &[Property] = &[Property::ResourceSafety];
const MX: &[Property] = &[Property::MutualExclusion];
const MX_FR: &[Property] = &[Property::MutualExclusion, Property::NoForeignRelease];

#[test]
fn every_etcd_row_reaches_its_verdict() {
    assert_family_rows(
        Family::Etcd,
        &[
            "etcd-lease-crash",
            "etcd-lease-pause",
            "etcd-lease-fenced",
            "etcd-txn-guarded",
            "etcd-lease-partition",
            "etcd-lock-expired-waiter",
            "etcd-unlock-retry",
            "etcd-unlock-retry-guarded",
            "etcd-leader-churn",
            "etcd-leader-isolated",
            "etcd-hung-worker",
        ],
    );
}

/// The leader cut off from its quorum changes leaders, never holders: even cut twice,
/// no two clients are inside at once (where Sentinel's split brain breaks); the holder
/// keeps its lease through the cut, which is told as a cut, not a kill.
#[test]
fn an_isolated_leader_grants_nothing_and_the_holder_keeps_its_lease() {
    let o = locklab_models::catalog::Overrides {
        faults: Some("failover=2".into()),
        ..Default::default()
    };
    let r = locklab_models::catalog::check(
        "etcd-leader-isolated",
        &o,
        locklab_models::check::Limits::default(),
        &mut |_| {},
    )
    .expect("a row");
    assert_eq!(r.verdict, Verdict::Holds);
    let row = locklab_models::catalog::find("etcd-leader-isolated").expect("a row");
    assert!(row.faults.contains("cut off") && row.lesson.contains("Sentinel"));
    let m = EtcdLock::new(Lock::Recipe, Work::Outside)
        .leader_cut()
        .model(MX, &Params::BASE.with_faults(&[(Fault::Failover, 1)]));
    use Action::*;
    let (s, told) = models::walk(&m, &[Step(0), Step(0), Tick, Failover, Tick]);
    assert!(
        told[3].contains("cut off from the other members") && !told[3].contains("killed"),
        "{told:?}"
    );
    assert_eq!(s.clients[0].phase, Phase::Critical(0), "{s:#?}");
    assert!(
        s.etcd.leases.contains_key(&1),
        "restarted by the new leader: {s:#?}"
    );
}

#[test]
fn lease_pause_story_expires_the_paused_holder_and_grants_the_next() {
    let r = run("etcd-lease-pause");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let t = story(&r, Property::MutualExclusion);
    assert_before(
        &t,
        &[
            (
                "c0: txn if create_revision(lock/1) = 0 then put lock/1 'c0' --lease=1",
                "c0 pauses (GC / SIGSTOP): its keep-alives stop too FAULT",
            ),
            ("c0 pauses", "lease 1 expires, etcd deletes lock/1"),
            (
                "lease 1 expires",
                "c1: txn if create_revision(lock/2) = 0 then put lock/2 'c1' --lease=2",
            ),
        ],
    );
    assert_two_inside(&r, &t, |l| l.starts_with("c0:") && l.ends_with("[PAUSED]"));
    assert!(t.contains("Jepsen's lock-set"), "{t}");
}

#[test]
fn lease_partition_story_keeps_the_cut_off_holder_working() {
    let r = run("etcd-lease-partition");
    let t = story(&r, Property::MutualExclusion);
    assert_before(
        &t,
        &[(
            "c0 is partitioned from the cluster",
            "lease 1 expires, etcd deletes lock/1",
        )],
    );
    assert_two_inside(&r, &t, |l| l.contains("[PARTITIONED]"));
    assert!(!t.contains("PAUSED"), "{t}");
}

#[test]
fn fencing_by_create_revision_saves_the_resource_the_lock_does_not() {
    // The same pause without the token: the paused holder's stale write is accepted.
    // With the token the lock is still broken; only the resource is safe.
    assert_fencing_saves_only_the_resource(
        "etcd-lease-fenced",
        &variant(Lock::Recipe, Work::Outside, RES, &one(Fault::Pause)),
        &[
            ("c0 reads the resource", "c0 pauses"),
            ("c1 reads the resource", "writes the resource"),
        ],
        &variant(Lock::Recipe, Work::Fenced, MX, &one(Fault::Pause)),
    );
}

#[test]
fn txn_guarded_write_holds_where_the_outside_write_loses_an_update() {
    assert_eq!(run("etcd-txn-guarded").verdict, Verdict::Holds);
    // The lock breaks as in lock-set, yet the guarded write is safe (lock-etcd-set).
    let stories = variant(Lock::Recipe, Work::TxnGuarded, MX, &one(Fault::Pause));
    assert_eq!(stories.len(), 1, "the lock itself still breaks");
    // Walk the break to its end: the paused holder's guarded put fails.
    let m = EtcdLock::new(Lock::Recipe, Work::TxnGuarded).model(RES, &one(Fault::Pause));
    use Action::*;
    let s = walk(
        &m,
        &[
            Step(0), // grant
            Step(0), // create: owner
            Step(0), // get counter
            Pause(0),
            Tick,
            Step(1), // grant
            Tick,    // lease 1 expires
            Step(1), // create: owner
            Step(1), // get counter
            Step(1), // guarded put
            Resume(0),
            Step(0), // guarded put, refused
        ],
    );
    assert_eq!(s.clients[0].phase, Phase::Release);
    assert_eq!(s.commits, 1, "only c1's write committed: {s:#?}");
    assert_eq!(s.etcd.keys["counter"].value, "1");
}

#[test]
fn lease_crash_frees_the_lock_after_the_ttl() {
    assert_eq!(run("etcd-lease-crash").verdict, Verdict::Holds);
    let m = EtcdLock::new(Lock::Recipe, Work::Outside).model(
        &[Property::MutualExclusion, Property::Liveness],
        &one(Fault::Crash),
    );
    use Action::*;
    let queued = walk(&m, &[Step(0), Step(0), Crash(0), Step(1), Step(1)]);
    assert_eq!(queued.clients[1].phase, Phase::Wait);
    assert!(m.next_state(&queued, Step(1)).is_none(), "still queued");
    let s = walk(
        &m,
        &[
            Step(0),
            Step(0),
            Crash(0),
            Step(1),
            Step(1),
            Tick,
            KeepAlive(1),
            Tick,
        ],
    );
    assert!(!s.etcd.keys.contains_key("lock/1"), "{s:#?}");
    let s = m.next_state(&s, Step(1)).expect("the wait ends");
    let s = m.next_state(&s, Step(1)).expect("its key is there");
    assert_eq!(s.clients[1].phase, Phase::Critical(0));
}

#[test]
fn leader_churn_restarts_the_dead_holders_lease_but_it_still_runs_out() {
    assert_eq!(run("etcd-leader-churn").verdict, Verdict::Holds);
    let m = EtcdLock::new(Lock::Recipe, Work::Outside).model(
        &[Property::Liveness],
        &Params::BASE.with_faults(&[(Fault::Crash, 1), (Fault::Failover, 2)]),
    );
    use Action::*;
    let s = walk(&m, &[Step(0), Step(0), Crash(0), Tick, Failover]);
    assert_eq!(s.etcd.leases[&1].deadline.lo, 3, "restarted at t=1");
    let s = walk(
        &m,
        &[Step(0), Step(0), Crash(0), Tick, Failover, Tick, Tick],
    );
    assert!(s.etcd.leases.is_empty() && s.etcd.keys.is_empty(), "{s:#?}");
}

#[test]
fn lock_rpc_refuses_a_waiter_whose_lease_is_gone_and_the_11456_server_does_not() {
    assert_eq!(run("etcd-lock-expired-waiter").verdict, Verdict::Holds);
    let three = Params {
        clients: 3,
        ..one(Fault::Revoke)
    };
    let buggy = Lock::LockRpc {
        check_own_key: false,
    };
    let stories = variant(buggy, Work::Outside, MX, &three);
    let t = text(&stories[0]);
    let revoked = t.find("operator revokes queued c").expect("the revoke");
    assert!(t[revoked..].contains("etcd's Lock RPC for c"), "{t}");
    assert!(t[revoked..].contains("--max-create-rev"), "{t}");
    assert!(t.contains("granted it once the keys before it went"), "{t}");
    assert!(t.matches("IN CRITICAL SECTION").count() >= 2, "{t}");
}

#[test]
fn unlock_retry_story_deletes_the_next_holders_key() {
    let r = run("etcd-unlock-retry");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion, Property::NoForeignRelease])
    );
    let t = story(&r, Property::MutualExclusion);
    assert_before(
        &t,
        &[
            (
                "c0 (reply lost): del lock -> 1 FAULT",
                "c1: txn if create_revision(lock) = 0 then put lock 'c1' --lease=2 -> SUCCEEDED",
            ),
            ("put lock 'c1'", "c0: del lock -> 1"),
            ("c0: del lock -> 1", "put lock 'c2'"),
        ],
    );
    assert_eq!(inside(&last_state(&r, Property::MutualExclusion)), 2, "{t}");
    let fr = story(&r, Property::NoForeignRelease);
    assert!(
        fr.contains("retried `del lock` deleted the key another client"),
        "{fr}"
    );
    // Guarded by the create revision, the retry deletes nothing of anyone else's.
    assert_eq!(run("etcd-unlock-retry-guarded").verdict, Verdict::Holds);
    let guarded = Lock::SingleKey {
        guarded_release: true,
    };
    let three = Params {
        clients: 3,
        ..one(Fault::Drop)
    };
    assert!(variant(guarded, Work::Outside, MX_FR, &three).is_empty());
}
