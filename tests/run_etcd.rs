//! `locklab run` of the etcd rows on a real 3-node etcd cluster started by the harness:
//! each reproduces the model's verdict under the row's fault, and the history holds
//! every etcd request the clients sent as a `command` event.
#![cfg(feature = "backends")]

use std::path::PathBuf;
use std::sync::Mutex;

use locklab_jepsen::{run, RunOptions, RunReport};
use locklab_traces::check::{Property, Verdict};
use locklab_traces::{Event, History, OpKind, Phase, Process};

#[path = "common/run_check.rs"]
mod run_check;
use run_check::check;

/// One run at a time: they share two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// The run of `id`, its history kept and read back.
fn agrees(id: &str) -> (RunReport, History) {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir: PathBuf =
        std::env::temp_dir().join(format!("locklab-run-etcd-test-{}-{id}", std::process::id()));
    let options = RunOptions {
        keep: Some(dir.clone()),
        ..RunOptions::new(id)
    };
    let r = run(&options, &mut |_| {}).unwrap_or_else(|e| panic!("{id}: {e}"));
    let path = r.history.clone().expect("the history was kept");
    let history = locklab_traces::reader::read_path(&path).expect("the history reads back");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        r.agreement.agrees && r.agreement.verdict != Verdict::Unknown,
        "{id}: run disagrees with the model or is unknown: {:#?}\n{:?}",
        r.agreement,
        r.timeline
    );
    // The etcd requests are etcd's vocabulary, not Redis's: no "one Redis" finding.
    assert!(
        r.report.findings.is_empty(),
        "{id}: {:?}",
        r.report.findings
    );
    // etcd ends leases late, and the history says so: the lock check holds nothing
    // after a TTL against the lock (a grant or a refusal in that gap is etcd's right).
    assert!(
        history.header.late_expiry,
        "{id}: an etcd history has late expiry"
    );
    assert_ne!(
        check(&r, Property::LockLinearizability),
        Verdict::Violation,
        "{id}: {:#?}",
        r.report.checks
    );
    (r, history)
}

/// The `command` events of `history` (every etcd request, with its reply).
fn commands(history: &History) -> Vec<&Event> {
    history
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e.op == OpKind::Command)
        .collect()
}

fn note(e: &Event) -> &str {
    e.note.as_deref().unwrap_or("")
}

/// The client the nemesis paused, when its pause began on the run clock, and how long
/// it lasted (ns).
fn pause(history: &History) -> (u32, u64, u64) {
    let stop = history
        .events
        .iter()
        .map(|(_, e)| e)
        .find(|e| {
            e.op == OpKind::Nemesis
                && e.value.as_ref().is_some_and(|v| {
                    v["fault"] == "client-pause"
                        && v["target"].as_str().is_some_and(|t| t != "any client")
                })
        })
        .expect("a client's pause in the history");
    let value = stop.value.as_ref().expect("a fault's value");
    let client = value["target"]
        .as_str()
        .and_then(|t| t.strip_prefix('c'))
        .and_then(|c| c.parse().ok())
        .expect("a paused client");
    let ms = value["ms"].as_u64().expect("the pause's length");
    (client, stop.time, ms * 1_000_000)
}

/// A stopped client sends nothing, its keep-alives included; the first keep-alive
/// after the stop finds its lease gone.
fn assert_stopped(history: &History) {
    // The stop begins after its event is written and lasts its length from then.
    let (client, from, length) = pause(history);
    let to = from + length;
    let mine: Vec<&Event> = commands(history)
        .into_iter()
        .filter(|e| e.process == Process::Client(client))
        .collect();
    assert!(
        !mine.iter().any(|e| e.time > from && e.time < to),
        "c{client} sent a request while stopped"
    );
    assert!(
        mine.iter().any(|e| e.time >= to
            && note(e).starts_with("lease keep-alive")
            && note(e).ends_with("requested lease not found")),
        "c{client}'s keep-alive after the stop did not find its lease gone"
    );
}

#[test]
fn a_stopped_holders_lease_expires_and_the_next_waiter_enters() {
    let (r, history) = agrees("etcd-lease-pause");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_stopped(&history);
    assert!(commands(&history)
        .iter()
        .any(|e| e.phase == Phase::Ok && note(e).starts_with("txn if create_revision(lock/")));
}

#[test]
fn the_create_revision_fences_the_stopped_holders_write() {
    let (r, history) = agrees("etcd-lease-fenced");
    // The lock is lost (two inside); the counter refuses the stale token.
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    assert_eq!(check(&r, Property::Fencing), Verdict::Ok);
    assert_stopped(&history);
    assert!(history
        .events
        .iter()
        .any(|(_, e)| e.op == OpKind::Write && e.phase == Phase::Fail));
}

#[test]
fn a_txn_guarded_by_the_lock_key_refuses_the_stopped_holders_write() {
    let (r, history) = agrees("etcd-txn-guarded");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    assert_stopped(&history);
    // The refusal is etcd's: the guarded put's compare failed on the lock key.
    assert!(
        commands(&history).iter().any(|e| {
            note(e).starts_with("txn if create_revision(lock/")
                && note(e).contains("then put counter")
                && note(e).ends_with("FAILED []")
        }),
        "no refused guarded write"
    );
}

#[test]
fn a_crashed_holders_lock_is_free_again_after_its_lease() {
    let (r, _) = agrees("etcd-lease-crash");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.expect("a crash was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
}
