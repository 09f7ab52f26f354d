//! `locklab run` of the SQL rows on real MariaDB and PostgreSQL servers started by the
//! harness: each reproduces the model's verdict under the row's fault.
#![cfg(feature = "backends")]

use std::sync::Mutex;

use locklab_jepsen::{run, RunOptions, RunReport};
use locklab_traces::check::{Property, Verdict};

#[path = "common/run_check.rs"]
mod run_check;
use run_check::check;

/// One run at a time: they share two cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn agrees(id: &str) -> RunReport {
    agrees_with(RunOptions::new(id))
}

/// The same, keeping the history in `dir`.
fn agrees_kept(id: &str, dir: &std::path::Path) -> RunReport {
    agrees_with(RunOptions {
        keep: Some(dir.to_path_buf()),
        ..RunOptions::new(id)
    })
}

fn agrees_with(options: RunOptions) -> RunReport {
    let id = options.id.clone();
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let r = run(&options, &mut |_| {}).unwrap_or_else(|e| panic!("{id}: {e}"));
    assert!(
        r.agreement.agrees && r.agreement.verdict != Verdict::Unknown,
        "{id}: run disagrees with the model or is unknown: {:#?}\n{:?}",
        r.agreement,
        r.timeline
    );
    r
}

#[test]
fn a_killed_session_frees_its_lock_while_the_holder_works_on() {
    for id in [
        "mysql-getlock-conn-kill",
        "sql-for-update-outside-tx",
        "pg-advisory",
    ] {
        let r = agrees(id);
        assert_eq!(
            check(&r, Property::MutualExclusion),
            Verdict::Violation,
            "{id}"
        );
        assert!(
            r.schedule
                .iter()
                .any(|s| s["fault"] == "kill-holder-session"),
            "{id}: {:?}",
            r.schedule
        );
    }
}

#[test]
fn a_crashed_holders_unique_row_stays() {
    let r = agrees("mysql-unique-crash");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.expect("a crash was recorded");
    assert!(l.stuck, "{}", l.summary);
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

#[test]
fn a_sequence_token_keeps_the_resource_safe_after_pg_terminate_backend() {
    let r = agrees("pg-advisory-fenced");
    // The lock is lost (two inside), the resource refuses the stale holder.
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
}

#[test]
fn work_in_the_locking_transaction_rolls_back_with_a_killed_session_or_a_crash() {
    for id in ["sql-for-update", "pg-advisory-xact"] {
        let dir = std::env::temp_dir().join(format!("locklab-run-sql-{id}-{}", std::process::id()));
        let r = agrees_kept(id, &dir);
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
        let _ = std::fs::remove_dir_all(&dir);
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
    }
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
