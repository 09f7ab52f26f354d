//! The SQL lock rows through the catalog: each verdict, and what each counterexample
//! shows (the statements, the fault, and who ends up inside).
#![cfg(feature = "model-check")]

use locklab_models::catalog::{params, Family, Overrides, Verdict};
use locklab_models::registry::{Fault, Property};

use crate::common::models;
use models::{
    before, each_reaches_its_verdict, family_ids, inside, last_state, run_with as run, story,
};

fn faults(f: &str) -> Overrides {
    Overrides {
        faults: Some(f.to_string()),
        ..Overrides::default()
    }
}

#[test]
fn every_sql_row_reaches_its_verdict() {
    let sql = family_ids(Family::Sql);
    assert_eq!(sql.len(), 19);
    each_reaches_its_verdict(&sql);
}

#[test]
fn unique_key_crash_leaves_a_row_nothing_deletes() {
    let r = run("mysql-unique-crash", Overrides::default());
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::Liveness]));
    let t = story(&r, Property::Liveness);
    assert!(
        before(
            &t,
            "INSERT INTO locks (name, owner, created) VALUES ('lock', 'c0', NOW()) -> OK, id 1",
            "c0 crashes"
        ),
        "{t}"
    );
    assert!(
        t.contains("crashes; the server sees its connection close FAULT"),
        "{t}"
    );
    assert!(t.contains("locks = [('lock', id 1, owner 'c0')]"), "{t}");
    assert!(
        t.contains("nothing deletes row 'lock' written by c0"),
        "{t}"
    );
    // Without the crash, the lock is live.
    assert_eq!(
        run("mysql-unique-crash", faults("none")).verdict,
        Verdict::Holds
    );
}

#[test]
fn reaper_story_deletes_a_paused_row_and_the_slow_holder_deletes_the_next() {
    let r = run("mysql-unique-reaper", Overrides::default());
    let mx = story(&r, Property::MutualExclusion);
    assert!(
        before(
            &mx,
            "pauses",
            "reaper job: DELETE FROM locks WHERE created < NOW() - 2 -> 1 row(s)"
        ),
        "{mx}"
    );
    assert!(
        before(&mx, "reaper job", "c1 (session 1): INSERT INTO locks (name, owner, created) VALUES ('lock', 'c1', NOW()) -> OK, id 2"),
        "{mx}"
    );
    assert_eq!(
        inside(&last_state(&r, Property::MutualExclusion)),
        2,
        "{mx}"
    );
    let fr = story(&r, Property::NoForeignRelease);
    assert!(
        before(
            &fr,
            "owner 'c1'",
            "c0 (session 0): DELETE FROM locks WHERE name = 'lock' -> 1 row(s)"
        ),
        "{fr}"
    );
    assert!(
        fr.contains("deleted the row the next holder inserted"),
        "{fr}"
    );
}

#[test]
fn a_dead_reaper_leaves_a_crashed_holders_row_for_ever() {
    let r = run("mysql-unique-reaper-dies", Overrides::default());
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::Liveness]));
    let t = story(&r, Property::Liveness);
    assert!(
        t.contains(
            "the reaper job dies (its host down, the job disabled); nothing restarts it FAULT"
        ),
        "{t}"
    );
    assert!(
        t.contains("c0 crashes; the server sees its connection close FAULT"),
        "{t}"
    );
    assert!(t.contains("reaper job: dead"), "{t}");
    assert!(t.contains("locks = [('lock', id 1, owner 'c0'"), "{t}");
    assert!(t.contains("The reaper job had died"), "{t}");
    // The same crash with the reaper alive: the row is reaped and the lock comes free.
    assert_eq!(
        run("mysql-unique-reaper-dies", faults("crash=1")).verdict,
        Verdict::Holds
    );
    // A dead reaper alone wedges nothing: every holder that lives releases.
    assert_eq!(
        run("mysql-unique-reaper-dies", faults("reaper-dies=1")).verdict,
        Verdict::Holds
    );
}

/// A code path that reads the stock with a plain SELECT beside the FOR UPDATE ones:
/// inside with the holder at once, and its consistent read of the old committed value
/// overwrites the holder's update once the row lock is free.
#[test]
fn a_plain_select_path_beside_for_update_is_not_excluded_and_loses_an_update() {
    let r = run("sql-for-update-plain-select", Overrides::default());
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion, Property::ResourceSafety])
    );
    let t = story(&r, Property::ResourceSafety);
    assert!(
        before(
            &t,
            "SELECT * FROM locks WHERE name = 'lock' FOR UPDATE",
            "c1's code path takes no lock"
        ),
        "{t}"
    );
    assert!(
        t.contains("c1 (session 1): SELECT n FROM counter -> 0"),
        "{t}"
    );
    assert!(
        before(
            &t,
            "c0 (session 0): COMMIT -> OK",
            "c1 (session 1): UPDATE counter SET n = 1"
        ),
        "{t}"
    );
    assert!(t.contains("plain SELECT") && t.contains("lost"), "{t}");
    let mx = story(&r, Property::MutualExclusion);
    assert!(mx.contains("never takes the lock"), "{mx}");
}

#[test]
fn a_lock_inside_the_transaction_is_released_before_the_commit() {
    let r = run("sql-mutex-in-tx", Overrides::default());
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::ResourceSafety]));
    let t = story(&r, Property::ResourceSafety);
    assert!(
        before(
            &t,
            "c0 returns from the synchronized method: the application's lock is free",
            "c1 enters the synchronized method"
        ),
        "{t}"
    );
    // c1 reads the committed value though c0 has written: c0 has not committed yet.
    assert!(t.contains("session 0 wrote 1 uncommitted"), "{t}");
    assert!(
        t.contains("c1 (session 1): SELECT n FROM counter -> 0"),
        "{t}"
    );
    assert!(
        before(
            &t,
            "c0 (session 0): COMMIT -> OK",
            "c1 (session 1): UPDATE counter SET n = 1"
        ),
        "{t}"
    );
    assert!(
        t.contains("the transaction around the method commits only after that"),
        "{t}"
    );
}

#[test]
fn read_uncommitted_hides_the_window_until_a_transaction_rolls_back() {
    let r = run("sql-mutex-in-tx-read-uncommitted", faults("none"));
    assert_eq!(r.verdict, Verdict::Holds);
    let r = run("sql-mutex-in-tx-read-uncommitted", Overrides::default());
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::ResourceSafety]));
    let t = story(&r, Property::ResourceSafety);
    assert!(
        t.contains("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED; BEGIN"),
        "{t}"
    );
    // The dirty read, then the rollback under it.
    assert!(
        before(
            &t,
            "c1 (session 1): SELECT n FROM counter -> 1",
            "c0's method throws after its lock was released; c0 (session 0): ROLLBACK -> OK FAULT"
        ),
        "{t}"
    );
    assert!(t.contains("the rolled-back update lives on in it"), "{t}");
    // The diagram's server lane carries the uncommitted write while it is pending, and
    // drops it at the rollback.
    let s = r
        .stories
        .iter()
        .find(|s| s.property == Property::ResourceSafety)
        .expect("a story");
    let server = |step: &locklab_models::checkable::StoryStep| {
        step.scene
            .lanes
            .iter()
            .find(|l| l.lane == "server")
            .map(|l| l.status.clone())
            .unwrap_or_default()
    };
    let update = s
        .steps
        .iter()
        .find(|st| st.action.contains("UPDATE counter SET n = 1"))
        .expect("c0's update");
    assert_eq!(server(update), "up; s0: n=1 uncommitted");
    let rollback = s.steps.iter().find(|st| st.fault).expect("the rollback");
    assert_eq!(server(rollback), "up");
}

#[test]
fn release_by_id_with_the_id_as_token_keeps_the_resource_safe() {
    let r = run("mysql-unique-reaper-fenced", Overrides::default());
    assert_eq!(r.verdict, Verdict::Holds);
    let r = run("mysql-unique-reaper-fenced", faults("pause=2"));
    assert_eq!(r.verdict, Verdict::Holds);
}

#[test]
fn client_clock_skew_lets_a_second_client_take_the_lease() {
    let r = run("mysql-lease-clock-skew", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    assert!(t.contains("c1's clock jumps 3 ahead FAULT"), "{t}");
    assert!(
        t.contains("c1 (session 1): UPDATE locks SET owner = 'c1', last_lock_time = 3 WHERE name = 'lock' AND last_lock_time < 3 - 2 -> 1 row(s)"),
        "{t}"
    );
    assert_eq!(inside(&last_state(&r, Property::MutualExclusion)), 2, "{t}");
    // The same lease without the skew holds.
    assert_eq!(
        run("mysql-lease-clock-skew", faults("none")).verdict,
        Verdict::Holds
    );
}

#[test]
fn database_time_does_not_survive_a_pause() {
    let r = run("mysql-lease-dbtime-pause", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    assert!(before(&t, "c0 pauses", "time passes to t=3"), "{t}");
    assert!(
        t.contains("c1 (session 1): UPDATE locks SET owner = 'c1', last_lock_time = NOW() WHERE name = 'lock' AND last_lock_time < NOW() - 2 -> 1 row(s)"),
        "{t}"
    );
    assert!(t.contains("[PAUSED]"), "{t}");
    assert_eq!(
        run("mysql-lease-dbtime-pause", faults("skew=1")).verdict,
        Verdict::Holds
    );
}

/// Check-then-set with no fault: both clients' SELECTs see the row free before either
/// UPDATE, and both UPDATEs succeed; the same lease taken by one compare-and-set
/// UPDATE holds at the same bounds.
#[test]
fn checking_a_lease_then_taking_it_lets_two_clients_in_without_a_fault() {
    let r = run("mysql-lease-no-cas", Overrides::default());
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let t = story(&r, Property::MutualExclusion);
    let check =
        "SELECT COUNT(*) FROM locks WHERE name = 'lock' AND last_lock_time < NOW() - 2 -> 1 row(s)";
    assert!(
        before(
            &t,
            &format!("c1 (session 1): {check}"),
            "c0 (session 0): UPDATE locks SET owner = 'c0'"
        ) || before(
            &t,
            &format!("c0 (session 0): {check}"),
            "c1 (session 1): UPDATE locks SET owner = 'c1'"
        ),
        "both checks come before the takes: {t}"
    );
    assert!(
        t.contains(
            "UPDATE locks SET owner = 'c1', last_lock_time = NOW() WHERE name = 'lock' -> 1 row(s)"
        ),
        "{t}"
    );
    assert!(
        !t.contains("FAULT") && !t.contains("pauses"),
        "no fault: {t}"
    );
    assert_eq!(inside(&last_state(&r, Property::MutualExclusion)), 2, "{t}");
    assert_eq!(
        run("mysql-lease-dbtime-pause", faults("none")).verdict,
        Verdict::Holds
    );
}

#[test]
fn the_database_clock_jumping_ahead_ends_a_lease_no_real_time_ran_out() {
    let r = run("mysql-lease-dbtime-jump", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    assert!(
        before(
            &t,
            "mariadb's clock jumps 3 ahead",
            "c1 (session 1): UPDATE locks"
        ),
        "{t}"
    );
    assert!(!t.contains("time passes"), "no real time passes: {t}");
    assert_eq!(inside(&last_state(&r, Property::MutualExclusion)), 2, "{t}");
    // The same lease without the jump holds.
    assert_eq!(
        run("mysql-lease-dbtime-jump", faults("none")).verdict,
        Verdict::Holds
    );
}

#[test]
fn killed_sessions_free_session_and_row_locks() {
    for (id, kill, lock) in [
        (
            "mysql-getlock-conn-kill",
            "KILL CONNECTION <session 0> FAULT",
            "c1 (session 1): SELECT GET_LOCK('lock', 0) -> 1",
        ),
        (
            "sql-for-update-outside-tx",
            "KILL CONNECTION <session 0> FAULT",
            "c1 (session 1): SELECT * FROM locks WHERE name = 'lock' FOR UPDATE -> 1 row(s)",
        ),
        (
            "pg-advisory",
            "SELECT pg_terminate_backend(<session 0>) FAULT",
            "c1 (session 1): SELECT pg_advisory_lock(1) -> OK",
        ),
    ] {
        let r = run(id, Overrides::default());
        let t = story(&r, Property::MutualExclusion);
        assert!(before(&t, kill, lock), "{id}: {t}");
        assert!(t.contains("session(s) 0 gone"), "{id}: {t}");
        assert_eq!(
            inside(&last_state(&r, Property::MutualExclusion)),
            2,
            "{id}: {t}"
        );
        assert_eq!(run(id, faults("none")).verdict, Verdict::Holds, "{id}");
    }
}

#[test]
fn work_in_the_locking_transaction_rolls_back_with_the_lock() {
    for id in ["sql-for-update", "pg-advisory-xact"] {
        for f in ["kill=1", "kill=2", "crash=1,kill=1"] {
            let r = run(id, faults(f));
            assert_eq!(r.verdict, Verdict::Holds, "{id} --faults {f}");
        }
    }
    // The kill is really reached: the unfenced session lock breaks under the same budget.
    assert!(matches!(
        run("pg-advisory", faults("kill=1")).verdict,
        Verdict::Violated(_)
    ));
}

#[test]
fn a_sequence_token_fences_a_terminated_backend() {
    for f in ["kill=1", "kill=2"] {
        assert_eq!(
            run("pg-advisory-fenced", faults(f)).verdict,
            Verdict::Holds,
            "{f}"
        );
    }
}

#[test]
fn a_pool_shares_the_lock_and_orphans_it() {
    let r = run("pg-advisory-pool", Overrides::default());
    let mx = story(&r, Property::MutualExclusion);
    assert!(
        before(
            &mx,
            "c0 (session 0): SELECT pg_advisory_lock(1) -> OK",
            "c1 (session 0): SELECT pg_advisory_lock(1) -> OK"
        ),
        "{mx}"
    );
    assert!(mx.contains("held by session 0 (session 2x"), "{mx}");
    let live = story(&r, Property::Liveness);
    assert!(
        live.contains("c0 (session 1): SELECT pg_advisory_unlock(1) -> f"),
        "{live}"
    );
    assert!(live.contains("advisory lock 1 held by session 0"), "{live}");
    assert!(live.contains("c1: acquiring"), "{live}");
}

#[test]
fn sql_faults_are_the_families_own() {
    let s = locklab_models::catalog::find("pg-advisory").expect("row");
    let p = params(s, &faults("kill=2,pause")).expect("sql faults");
    assert_eq!(p.faults, vec![(Fault::Kill, 2), (Fault::Pause, 1)]);
    let e = params(s, &faults("failover")).expect_err("a Redis fault");
    assert_eq!(
        e.to_string(),
        "invalid --faults: unknown fault \"failover\" for pg-advisory; known: pause, crash, hang, kill, skew, jump, reaper-dies, rollback"
    );
}
