//! `locklab run` of the etcd rows on a real 3-node etcd cluster started by the harness:
//! each reproduces the model's verdict under the row's fault, and the history holds
//! every etcd request the clients sent as a `command` event.
#![cfg(feature = "backends")]

use std::path::Path;
use std::process::Command;

use locklab_jepsen::{RunOptions, RunReport};
use locklab_traces::check::{Property, Verdict};
use locklab_traces::{Event, History, OpKind, Phase, Process};

use crate::common::run_check;
use crate::common::runs;
use run_check::{check, check_of, nemesis};
use runs::{assert_agrees, run_one};

/// The run of `id`, its history kept in `dir` and read back.
fn recorded_in(id: &str, dir: &Path) -> (RunReport, History) {
    let r = run_one(&RunOptions {
        keep: Some(dir.to_path_buf()),
        ..RunOptions::new(id)
    });
    let path = r.history.clone().expect("the history was kept");
    let history = locklab_traces::reader::read_path(&path).expect("the history reads back");
    // The etcd requests are etcd's vocabulary, not Redis's: no "one Redis" finding.
    assert!(
        r.report.findings.iter().all(|f| f.name != "one Redis"),
        "{id}: {:?}",
        r.report.findings
    );
    // etcd ends leases late, and the history says so: the lock check holds nothing
    // after a TTL against the lock (a grant or a refusal in that gap is etcd's right).
    assert!(
        history.header.late_expiry,
        "{id}: an etcd history has late expiry"
    );
    (r, history)
}

/// A directory for `id`'s history, removed when dropped — also when the test fails.
fn run_dir(id: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("locklab-run-etcd-test-{id}-"))
        .tempdir()
        .expect("a temp dir")
}

/// The run of `id`, its history read back, where the run breaks the lock itself or
/// not as the model says.
fn recorded(id: &str) -> (RunReport, History) {
    recorded_in(id, run_dir(id).path())
}

/// The run of `id` agreeing with the model, its history read back; etcd's late lease
/// expiry never counts against the lock.
fn agrees(id: &str) -> (RunReport, History) {
    let (r, history) = recorded(id);
    assert_agrees(&r);
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

/// The client the nemesis struck with `fault` (as the client recorded it), when on the
/// run clock, and how long the fault lasted (ns; 0 for a fault without a length).
fn client_fault(history: &History, fault: &str) -> (u32, u64, u64) {
    let struck = history
        .events
        .iter()
        .map(|(_, e)| e)
        .find(|e| {
            e.op == OpKind::Nemesis
                && e.value_json().is_some_and(|v| {
                    v["fault"] == fault && v["target"].as_str().is_some_and(|t| t != "any client")
                })
        })
        .unwrap_or_else(|| panic!("a client's {fault} in the history"));
    let value = struck.value_json().expect("a fault's value");
    let client = value["target"]
        .as_str()
        .and_then(|t| t.strip_prefix('c'))
        .and_then(|c| c.parse().ok())
        .expect("a struck client");
    let ms = value["ms"].as_u64().unwrap_or(0);
    (client, struck.time, ms * 1_000_000)
}

fn pause(history: &History) -> (u32, u64, u64) {
    client_fault(history, "client-pause")
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
    let dir = run_dir("etcd-lease-pause");
    let dir = dir.path();
    let (r, history) = recorded_in("etcd-lease-pause", dir);
    assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_ne!(check(&r, Property::LockLinearizability), Verdict::Violation);
    assert_stopped(&history);
    assert!(commands(&history)
        .iter()
        .any(|e| e.phase == Phase::Ok && note(e).starts_with("txn if create_revision(lock/")));
    // Jepsen's name for this workload, in the report and the history's header.
    assert_eq!(r.jepsen_workload.as_deref(), Some("lock-set"));
    assert_eq!(history.header.tools["jepsen-workload"], "lock-set");
    exports_to_edn_with_the_same_verdicts(&r, dir);
}

/// The run's history, written out as Jepsen EDN by `locklab export`, is a history
/// Knossos takes (filtered to the lock's operations, for its mutex model) and reads back
/// through `check-history --input-format edn` with every verdict the run had.
fn exports_to_edn_with_the_same_verdicts(r: &RunReport, dir: &Path) {
    let locklab = env!("CARGO_BIN_EXE_locklab");
    let jsonl = r.history.clone().expect("the history was kept");
    let edn = dir.join("history.edn");
    let out = Command::new(locklab)
        .arg("export")
        .arg(&jsonl)
        .args(["--to", "edn", "--output"])
        .arg(&edn)
        .output()
        .expect("locklab export runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&edn).expect("the EDN file");
    assert_eq!(
        locklab_traces::export::knossos_refusal(&text, &["acquire", "release"]).expect("reads"),
        None
    );
    let out = Command::new(locklab)
        .arg("check-history")
        .arg(&edn)
        .args(["--input-format", "edn", "--format", "json"])
        .output()
        .expect("locklab check-history runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let verdicts = |checks: &serde_json::Value| -> Vec<(String, String)> {
        checks
            .as_array()
            .expect("checks")
            .iter()
            .map(|c| (c["property"].to_string(), c["verdict"].to_string()))
            .collect()
    };
    let recorded = serde_json::to_value(&r.report.checks).expect("the run's checks");
    assert_eq!(verdicts(&v["checks"]), verdicts(&recorded), "{v}");
    assert_eq!(out.status.code(), Some(1), "mutual exclusion is violated");
}

#[test]
fn the_create_revision_fences_the_stopped_holders_write() {
    let (r, history) = agrees("etcd-lease-fenced");
    // Every member a host of its own, on etcd's well-known client port.
    runs::assert_on_hosts(&r, 2379, 3);
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
    assert_eq!(r.jepsen_workload.as_deref(), Some("lock-etcd-set"));
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

/// A holder whose worker hangs while its keep-alive task runs on: every keep-alive of
/// its lease is answered alive, its key stays, and nobody is granted for the rest of
/// the run — the mirror image of etcd-lease-pause.
#[test]
fn a_hung_workers_keep_alives_keep_the_lock_for_ever() {
    let (r, h) = runs::stuck_behind_a_hung_holder("etcd-hung-worker");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.as_ref().expect("a hang");
    let kept = h
        .events
        .iter()
        .filter(|(_, e)| {
            e.op == OpKind::Command
                && e.phase == Phase::Ok
                && e.process.to_string() == l.crashed
                && e.time > l.crashed_at_ns
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.starts_with("lease keep-alive"))
        })
        .count();
    // About 9 s of a 2 s lease kept alive every third of it.
    assert!(kept >= 5, "{} kept its lease alive {kept} times", l.crashed);
}

#[test]
fn a_crashed_holders_lock_is_free_again_after_its_lease() {
    let (r, _) = agrees("etcd-lease-crash");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.as_ref().expect("a crash was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
    // The model says a lease lock is eventually free; the run saw it, and so it is at
    // least as live as the model.
    let p = r.progress.as_ref().expect("compared with the model");
    assert_eq!(
        (p.model, p.agrees, p.at_least_as_live),
        (
            locklab_jepsen::agreement::progress::ModelSays::Holds,
            locklab_jepsen::agreement::Answer::Yes,
            locklab_jepsen::agreement::Answer::Yes
        ),
        "{}",
        p.summary
    );
    // The revision recipe grants the lowest create revision still waiting: in order,
    // as the model's fifo says.
    runs::assert_grants_in_request_order(&r);
    runs::assert_nobody_starved(&r);
}

#[test]
fn a_partitioned_holders_lease_expires_while_it_works_on() {
    let (r, history) = agrees("etcd-lease-partition");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(r.jepsen_workload.as_deref(), Some("lock-set"));
    // Unlike a stopped client, the cut-off one keeps sending keep-alives, and none
    // gets through.
    let (client, from, length) = client_fault(&history, "client-partition");
    let cut: Vec<&Event> = commands(&history)
        .into_iter()
        .filter(|e| e.process == Process::Client(client) && e.time > from && e.time < from + length)
        .collect();
    assert!(
        cut.iter().any(|e| note(e).starts_with("lease keep-alive")),
        "c{client} sent no keep-alive while cut off"
    );
    assert!(
        cut.iter().all(|e| e.phase == Phase::Info),
        "a request of c{client}'s got through the partition"
    );
}

#[test]
fn a_retried_delete_by_name_removes_the_next_holders_key() {
    let (r, history) = recorded("etcd-unlock-retry");
    assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    let foreign = check_of(&r, Property::NoForeignRelease);
    assert_eq!(foreign.verdict, Verdict::Violation);
    assert!(
        foreign.summary.contains("proven from the etcd requests"),
        "{}",
        foreign.summary
    );
    // The lock service itself granted a third client while the second held it.
    assert_eq!(check(&r, Property::LockLinearizability), Verdict::Violation);
    // The first delete got no reply; the same client's retry removed a key.
    let (client, _, _) = client_fault(&history, "client-drop");
    let dels: Vec<&Event> = commands(&history)
        .into_iter()
        .filter(|e| e.process == Process::Client(client) && note(e).starts_with("del lock "))
        .collect();
    let lost = dels
        .iter()
        .position(|e| e.phase == Phase::Info)
        .expect("a delete whose reply was lost");
    assert!(
        note(dels.get(lost + 1).expect("its retry")).ends_with("-> 1"),
        "{:?}",
        dels.iter().map(|e| note(e)).collect::<Vec<_>>()
    );
}

#[test]
fn a_retried_delete_guarded_by_revision_removes_nothing_of_anyone_elses() {
    let (r, history) = agrees("etcd-unlock-retry-guarded");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
    let (client, _, _) = client_fault(&history, "client-drop");
    let guarded: Vec<&Event> = commands(&history)
        .into_iter()
        .filter(|e| {
            e.process == Process::Client(client)
                && note(e).starts_with("txn if create_revision(lock) = ")
                && note(e).contains("then del lock")
        })
        .collect();
    let lost = guarded
        .iter()
        .position(|e| e.phase == Phase::Info)
        .expect("a guarded delete whose reply was lost");
    assert!(
        note(guarded.get(lost + 1).expect("its retry")).ends_with("-> FAILED []"),
        "the retry found the next holder's key and left it"
    );
}

#[test]
fn leader_churn_keeps_a_dead_holders_lock_past_its_ttl_and_then_frees_it() {
    let (r, history) = agrees("etcd-leader-churn");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let churns: Vec<&Event> = history
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| {
            e.op == OpKind::Nemesis && e.value_json().is_some_and(|v| v["fault"] == "churn-leader")
        })
        .collect();
    assert_eq!(churns.len(), 2, "two leader changes");
    assert!(
        churns.iter().all(|e| e.note.is_none()),
        "{:?}",
        churns.iter().map(|e| &e.note).collect::<Vec<_>>()
    );
    // The lease of the dead holder ran 2 s; each new leader restarted it.
    let l = r.liveness.expect("a crash was recorded");
    let after = l.granted_after_ns.expect("the lock was granted again");
    assert!(!l.stuck, "{}", l.summary);
    assert!(
        after > 3_000_000_000,
        "granted again {} ms after the crash: the leader changes did not lengthen the lease",
        after / 1_000_000
    );
}

/// The leader cut off from its quorum on hosts of its own: the history names the
/// member cut off and the heal, etcd's logs show the others electing a new leader, and
/// the holder working through the cut keeps its lock — no two holders, as the model
/// says (where Sentinel's split brain grants twice).
#[test]
fn an_isolated_leader_changes_leaders_not_holders() {
    let (r, history) = agrees("etcd-leader-isolated");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert!(
        r.topology.contains("each on a host of its own"),
        "{}",
        r.topology
    );
    let cut = nemesis(&history, "isolate-leader");
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert!(["e1", "e2", "e3"].contains(&cut[0].0.as_str()), "{cut:?}");
    assert!(cut[0].1.is_none(), "the cut was made: {cut:?}");
    assert_eq!(nemesis(&history, "heal-isolation").len(), 1);
    assert!(
        r.agreement.exercised.sections >= 2,
        "the lock was granted again after the cut: {:?}",
        r.agreement.exercised
    );
}

/// The find-out row: the model's correct server refuses a waiter whose lease went while
/// it queued; Debian's etcd 3.4.23 grants it, on a key that no longer exists, and then
/// grants the lock to another client too (etcd issue 11456). The history lines are the
/// evidence the README quotes.
#[test]
fn debians_etcd_grants_the_lock_rpc_to_a_waiter_whose_lease_was_revoked() {
    let (r, history) = recorded("etcd-lock-expired-waiter");
    assert!(
        r.agreement.exact == locklab_jepsen::agreement::Answer::No,
        "this etcd kept the lock (agrees with the model's correct server): update the README's finding"
    );
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    let all: Vec<&Event> = history.events.iter().map(|(_, e)| e).collect();
    let revoke = all
        .iter()
        .find(|e| e.process == Process::NEMESIS && note(e).starts_with("lease revoke "))
        .expect("the nemesis's revoke, recorded as its request");
    assert!(note(revoke).ends_with("-> revoked"), "{}", note(revoke));
    let lease = note(revoke)
        .strip_prefix("lease revoke ")
        .and_then(|n| n.split_whitespace().next())
        .expect("the revoked lease");
    // The waiter's Lock call on that lease, answered after the revoke: granted.
    let granted = all
        .iter()
        .find(|e| {
            e.op == OpKind::Command && note(e).starts_with(&format!("lock lock --lease={lease} "))
        })
        .expect("the waiter's Lock call");
    assert!(
        note(granted).ends_with(&format!("-> locked lock/{lease}")),
        "{}",
        note(granted)
    );
    let answered = granted
        .value_json()
        .and_then(|v| v["return"].as_u64())
        .expect("its reply time");
    assert!(
        answered > revoke.time,
        "granted after its lease was revoked"
    );
}

/// A random nemesis of leader changes on hosts of their own: each cuts the leader of
/// the moment off from the other two members and heals the cut before the next; every
/// cut is one failover of the model, and the quorum keeps the lock through them all.
#[test]
fn random_leader_isolations_break_nothing_the_recipe_promises() {
    let cut = runs::random_leader_changes(
        "etcd-leader-isolated",
        "isolate-leader",
        "heal-isolation",
        2,
    );
    assert!(
        cut.iter().all(|c| ["e1", "e2", "e3"].contains(&c.as_str())),
        "{cut:?}"
    );
}
