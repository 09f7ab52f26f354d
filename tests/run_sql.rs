//! `locklab run` of the SQL rows on real MariaDB and PostgreSQL servers started by the
//! harness: each reproduces the model's verdict under the row's fault.
#![cfg(feature = "backends")]

use locklab_jepsen::family::Family;
use locklab_jepsen::plan::Plan;
use locklab_jepsen::sql::cluster::{MariaDb, Postgres};
use locklab_jepsen::sql::plans::{with_partition, with_server_restarted};
use locklab_jepsen::{run, RunOptions, RunReport};
use locklab_models::registry::ScenarioId;
use locklab_traces::check::{Property, Verdict};
use locklab_traces::format::{CommandValue, History, OpKind, Phase};

use crate::common::run_check;
use crate::common::runs;
use run_check::{check, nemesis};
use runs::{agrees, agrees_with, assert_agrees, plan_kept, run_one};

/// The same, keeping the history in `dir`.
fn agrees_kept(id: &str, dir: &std::path::Path) -> RunReport {
    agrees_with(&RunOptions {
        keep: Some(dir.to_path_buf()),
        ..RunOptions::new(id)
    })
}

#[test]
fn a_killed_session_frees_its_lock_while_the_holder_works_on() {
    runs::side_by_side(
        &[
            "mysql-getlock-conn-kill",
            "sql-for-update-outside-tx",
            "pg-advisory",
        ],
        |id| {
            let r = agrees(id);
            assert_eq!(
                check(&r, Property::MutualExclusion),
                Verdict::Violation,
                "{id}"
            );
            // The server is a host of its own, on its well-known port.
            runs::assert_on_hosts(&r, if id.starts_with("pg-") { 5432 } else { 3306 }, 1);
            assert!(
                r.schedule
                    .iter()
                    .any(|s| s["fault"] == "kill-holder-session"),
                "{id}: {:?}",
                r.schedule
            );
        },
    );
}

/// The run saw the lock stuck after its crash, as the model's lasso says it can stay.
fn stuck_as_the_model_says(r: &RunReport) {
    runs::assert_stuck_as_the_model_says(r, "client-crash");
}

#[test]
fn a_crashed_holders_unique_row_stays() {
    let r = agrees("mysql-unique-crash");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    stuck_as_the_model_says(&r);
}

#[test]
fn a_dead_reaper_leaves_a_crashed_holders_row_like_no_reaper_at_all() {
    let r = agrees("mysql-unique-reaper-dies");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert!(
        r.schedule.iter().any(|s| s["fault"] == "stop-reaper"),
        "{:?}",
        r.schedule
    );
    stuck_as_the_model_says(&r);
}

/// A GET_LOCK holder whose worker hangs while its connection stays open keeps the lock
/// for the rest of the run: its session never ends.
#[test]
fn a_hung_workers_open_session_keeps_its_get_lock_for_ever() {
    let (r, _) = runs::stuck_behind_a_hung_holder("mysql-getlock-hung");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
}

/// The code path that reads with a plain SELECT runs inside beside the FOR UPDATE
/// holders and its writes, built on stale reads, lose updates.
#[test]
fn a_plain_select_path_beside_for_update_loses_updates() {
    let r = agrees("sql-for-update-plain-select");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
}

/// The application's lock excludes every section, and the counter still loses updates:
/// each holder's write commits 50 ms after the next client took the lock and read.
#[test]
fn a_lock_released_before_its_transaction_commits_loses_updates() {
    let r = agrees("sql-mutex-in-tx");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
}

/// At `READ UNCOMMITTED` the next client reads the holder's write before it commits;
/// when the holder's work then fails and rolls back, that read saw a value no committed
/// write made, and the next client commits on top of it.
#[test]
fn read_uncommitted_commits_on_a_write_that_rolled_back() {
    let r = agrees("sql-mutex-in-tx-read-uncommitted");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert_eq!(
        check(&r, Property::ResourceLinearizability),
        Verdict::Violation
    );
    // The final value moved past what the acknowledged updates add up to: the rolled
    // back write's unit survived in the next client's update.
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
}

#[test]
fn database_time_does_not_survive_a_holders_pause() {
    let r = agrees("mysql-lease-dbtime-pause");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

#[test]
fn a_reaper_gives_two_holders_and_a_foreign_delete_unless_released_by_id() {
    let r = agrees("mysql-unique-reaper");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Violation);
    let r = agrees("mysql-unique-reaper-fenced");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
}

#[test]
fn a_client_clock_ahead_takes_a_held_lease() {
    let r = agrees("mysql-lease-clock-skew");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

/// Check-then-set on real MariaDB, no fault: clients that start together each see
/// the lease row free and each UPDATE takes it; no release is anyone else's (each
/// release names its own owner).
#[test]
fn checking_a_lease_then_taking_it_lets_two_clients_in_on_mariadb() {
    let r = agrees("mysql-lease-no-cas");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
    assert!(r.schedule.is_empty(), "{:?}", r.schedule);
}

/// The database's own clock steps 3 s ahead (MariaDB under libfaketime) while the
/// first holder works: its 2 s lease by `NOW()` reads as expired and the next client
/// takes the row — no pause, no skew, one clock.
#[test]
fn the_database_clock_jumping_ahead_hands_a_held_lease_to_the_next_client() {
    let r = agrees("mysql-lease-dbtime-jump");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
    assert!(
        r.schedule
            .iter()
            .any(|s| s["fault"] == "clock" && s["target"] == "primary"),
        "{:?}",
        r.schedule
    );
}

/// A random nemesis of clock jumps on MariaDB (a server fault, drawn as a step of the
/// schedule): the lease by `NOW()` breaks, the model with the same jumps allows it,
/// and the shrinker brings it down to one jump it saw break.
#[test]
fn a_random_clock_nemesis_breaks_a_database_time_lease_and_shrinks_to_one_jump() {
    let options = RunOptions {
        duration: Some(std::time::Duration::from_secs(12)),
        seed: 5,
        random: Some(locklab_jepsen::random::RandomNemesis::parse("random:jump").expect("spec")),
        ..RunOptions::new("mysql-lease-dbtime-pause")
    };
    let r = run_one(&options);
    let n = r
        .nemesis
        .as_ref()
        .expect("a random run reports its nemesis");
    assert!(n.model_faults.starts_with("jump="), "{n:?}");
    assert!(n.broken.iter().any(|b| b == "mutual exclusion"), "{n:?}");
    assert!(
        n.active.iter().any(|a| a.starts_with("clock mariadb")),
        "{n:?}"
    );
    assert_ne!(
        r.agreement.at_least_as_safe,
        locklab_jepsen::agreement::Answer::No,
        "the model with the same jumps allows it: {:#?}",
        r.agreement
    );
    let s = n.shrunk.as_ref().expect("a violation is shrunk");
    assert!(s.reproduced, "{s:?}");
    assert_eq!(s.plan.len(), 1, "{s:?}");
    assert!(s.plan[0].contains("clock primary to +"), "{s:?}");
}

#[test]
fn a_sequence_token_keeps_the_resource_safe_after_pg_terminate_backend() {
    let r = agrees("pg-advisory-fenced");
    // The lock is lost (two inside), the resource refuses the stale holder.
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
}

#[test]
fn work_in_the_locking_transaction_rolls_back_with_a_killed_session_or_a_crash() {
    runs::side_by_side(&["sql-for-update", "pg-advisory-xact"], |&id| {
        // Removed when dropped, also when an assertion below fails.
        let kept = tempfile::Builder::new()
            .prefix(&format!("locklab-run-sql-{id}-"))
            .tempdir()
            .expect("a temp dir");
        let dir = kept.path();
        let r = agrees_kept(id, dir);
        // Every statement is in the history as a command event, the lock's among them.
        let history = std::fs::read_to_string(dir.join("history.jsonl")).expect("history");
        let statement = if id == "sql-for-update" {
            "select-for-update"
        } else {
            "try-advisory-lock"
        };
        assert!(
            history
                .lines()
                .any(|l| l.contains("\"op\":\"command\"") && l.contains(statement)),
            "{id}: no {statement} command event"
        );
        assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok, "{id}");
        assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok, "{id}");
        assert!(
            r.schedule
                .iter()
                .any(|s| s["fault"] == "kill-holder-session"),
            "{id}: {:?}",
            r.schedule
        );
        if id == "sql-for-update" {
            // A crashed holder's connection closes with its process: the server rolls
            // its transaction back and the next client is granted.
            let l = r.liveness.expect("a crash was recorded");
            assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
        }
    });
}

#[test]
fn a_session_lock_through_a_pool_belongs_to_a_backend_not_a_client() {
    // No fault: a lock taken through one backend is re-entered by whichever client the
    // pool hands that backend next.
    let r = agrees("pg-advisory-pool");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert!(r.schedule.is_empty(), "{:?}", r.schedule);
}

#[test]
fn replicas_are_refused_for_a_single_server() {
    let options = RunOptions {
        replicas: Some(2),
        ..RunOptions::new("pg-advisory")
    };
    let e = run(&options, &mut |_| {}).expect_err("one server");
    assert!(e.to_string().contains("--replicas"), "{e}");
}

/// Runs `plan` (a variant of a catalog row) alone, keeping its history; the run must
/// agree with the row's model.
fn plan_agrees<F: Family>(plan: Plan<F>) -> (RunReport, History) {
    let (r, h) = plan_kept(plan);
    assert_agrees(&r);
    eprintln!("{}: {} ms, {} events", r.id, r.wall_ms, r.events);
    (r, h)
}

/// The nemesis did each of `faults` once, in that order; when each was done.
fn done_in_order<const N: usize>(h: &History, faults: [&str; N]) -> [u64; N] {
    let mut times = [0; N];
    let mut last = 0;
    for (fault, time) in faults.iter().zip(&mut times) {
        let done = nemesis(h, fault);
        assert!(
            done.len() == 1 && done[0].1.is_none() && done[0].2 >= last,
            "{}: {fault}: {done:?}",
            h.header.protocol
        );
        last = done[0].2;
        *time = last;
    }
    times
}

/// After `since` some client is granted the lock again, and its statements, answered
/// on the session it opened after the fault, are in the history as command events.
/// (The session ids say little: a restarted MariaDB counts its connections from 1
/// again.)
fn granted_again_after(h: &History, since: u64) {
    let id = &h.header.protocol;
    let after = |op: OpKind| {
        h.events
            .iter()
            .filter(move |(_, e)| e.op == op && e.phase == Phase::Ok && e.time > since)
            .map(|(_, e)| e)
    };
    let granted: Vec<_> = after(OpKind::Acquire).map(|e| e.process).collect();
    assert!(!granted.is_empty(), "{id}: nobody granted after the fault");
    let answered = after(OpKind::Command).any(|e| {
        granted.contains(&e.process)
            && e.value
                .as_ref()
                .and_then(|v| v.parse::<CommandValue>().ok())
                .is_some_and(|v| v.session.is_some() && v.reply.is_some())
    });
    assert!(
        answered,
        "{id}: no statement of a granted client recorded after the fault"
    );
}

/// `plan` agrees and shows two holders; the nemesis did each of `faults` once, in that
/// order, and after the last some client is granted again.
fn two_holders_then_granted_again<F: Family>(plan: Plan<F>, faults: [&str; 2]) {
    let (r, h) = plan_agrees(plan);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    let [_, back] = done_in_order(&h, faults);
    granted_again_after(&h, back);
}

/// The server killed (`kill -9`) where the row kills the holder's session and
/// restarted on its data dir: the session ends with the server just as with `KILL
/// CONNECTION`. `GET_LOCK` frees the lock while the holder works on (two holders);
/// `FOR UPDATE`'s transaction, the work in it, rolls back with it (the resource stays
/// safe). Either way the clients open new sessions and are granted again.
#[test]
fn a_server_restart_ends_the_holders_session_as_a_kill_does() {
    // (row, whether its work survives the holder's session)
    runs::side_by_side(
        &[
            (ScenarioId::MysqlGetlockConnKill, true),
            (ScenarioId::SqlForUpdate, false),
        ],
        |&(id, work_survives)| {
            let plan = with_server_restarted::<MariaDb>(id).expect("a session-kill row");
            let (r, h) = plan_agrees(plan);
            let [_, back] = done_in_order(&h, ["kill", "restart"]);
            granted_again_after(&h, back);
            let two_holders = check(&r, Property::MutualExclusion) == Verdict::Violation;
            assert_eq!(two_holders, work_survives, "{id}");
            if !work_survives {
                assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok, "{id}");
                let l = r.liveness.expect("a crash was recorded");
                assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
            }
        },
    );
}

/// The same on PostgreSQL: the advisory lock dies with the postmaster's backends.
#[test]
fn a_postgres_restart_frees_an_advisory_lock_while_the_holder_works_on() {
    let plan =
        with_server_restarted::<Postgres>(ScenarioId::PgAdvisory).expect("a session-kill row");
    two_holders_then_granted_again(plan, ["kill", "restart"]);
}

/// Every client cut from the server by the run's proxy for 0.3 s, where the row kills
/// the holder's session: the server sees the connections close and ends the sessions,
/// `GET_LOCK`'s with them, so after the heal another client is granted while the
/// holder still works.
#[test]
fn a_partition_ends_the_holders_session_as_a_kill_does() {
    let plan =
        with_partition::<MariaDb>(ScenarioId::MysqlGetlockConnKill).expect("a session-kill row");
    two_holders_then_granted_again(plan, ["partition", "heal-partition"]);
}

#[test]
fn only_rows_whose_fault_kills_a_session_have_these_variants() {
    assert!(with_server_restarted::<MariaDb>(ScenarioId::MysqlUniqueCrash).is_none());
    assert!(with_partition::<Postgres>(ScenarioId::PgAdvisoryPool).is_none());
    fn faults<F: Family>(p: Option<Plan<F>>) -> Vec<String> {
        let p = p.expect("a session-kill row");
        p.faults
            .iter()
            .map(|s| s.action.name().to_string())
            .collect()
    }
    assert_eq!(
        faults(with_partition::<MariaDb>(ScenarioId::SqlForUpdate)),
        ["partition", "heal-partition", "client-crash"]
    );
    assert_eq!(
        faults(with_server_restarted::<Postgres>(ScenarioId::PgAdvisory)),
        ["kill", "restart"]
    );
}
