//! A protocol file run on real servers: the steps the model explores, sent by a real
//! client (its scripts by `EVALSHA`), under the scenario's servers and faults; the
//! history is held against the model of *that* protocol, and every command's reply is
//! replayed against the spec.
#![cfg(feature = "backends")]

use std::path::Path;

use locklab_jepsen::{RunOptions, RunReport};
use locklab_models::protocol;
use locklab_traces::check::{Property, Verdict};
use locklab_traces::format::OpKind;

use crate::common::run_check;
use crate::common::runs;
use run_check::check;
use runs::{assert_agrees, run_kept};

fn options(id: &str) -> RunOptions {
    with_file(id, "lua-compare-and-delete.toml")
}

fn with_file(id: &str, name: &str) -> RunOptions {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/protocols")
        .join(name);
    let d = protocol::load(&file).unwrap_or_else(|e| panic!("{e}"));
    RunOptions {
        lock: Some(locklab_jepsen::registry::protocol_lock(&d).unwrap_or_else(|e| panic!("{e}"))),
        protocol: Some(d),
        ..RunOptions::new(id)
    }
}

/// How many of the history's commands `is` picks.
fn commands(h: &locklab_traces::format::History, is: impl Fn(&serde_json::Value) -> bool) -> usize {
    h.events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Command)
        .filter(|(_, e)| e.value_json().is_some_and(|v| is(&v["command"])))
        .count()
}

/// The run agrees with the protocol's model, its release script was among the
/// commands, and replaying the replies against the spec says `expected`.
fn agrees_and_replays(id: &str, expected: Verdict) -> RunReport {
    let (r, h) = run_kept(options(id));
    assert_agrees(&r);
    assert_eq!(r.lock, "SET NX PX; compare-and-delete script", "{}", r.id);
    let evals = commands(&h, |c| c.get("eval").is_some());
    assert!(evals > 0, "{id}: no release script among the commands");
    let one_redis = r
        .report
        .findings
        .iter()
        .find(|f| f.name == "one Redis")
        .unwrap_or_else(|| panic!("{id}: no one-Redis finding: {:#?}", r.report.findings));
    assert_eq!(one_redis.verdict, expected, "{id}: {one_redis:#?}");
    r
}

#[test]
fn a_lua_protocol_file_agrees_with_its_model_under_a_pause() {
    let r = agrees_and_replays("redis-lua-pause", Verdict::Ok);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
}

#[test]
fn a_lua_protocol_file_agrees_with_its_model_under_a_failover() {
    // The promoted replica never saw the first grant: a second grant of the same key
    // is no reply one server could give, which the spec's replay proves.
    let r = agrees_and_replays("redis-failover", Verdict::Violation);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

/// `{reply}` on a real server: each attempt's `INCR` reply is the value it sets and the
/// one its release compares, so the paused holder's release spares the next holder's
/// lock although every client has the same `{token}` — as the model of the file says.
#[test]
fn a_sequence_value_protocol_agrees_with_its_model_under_a_pause() {
    let (r, h) = run_kept(with_file("redis-lua-pause", "sequence-value.toml"));
    assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
    let sets_a_sequence = h.events.iter().any(|(_, e)| {
        e.op == OpKind::Command
            && e.value_json().is_some_and(|v| {
                v["command"]["set"]["value"]
                    .as_str()
                    .is_some_and(|x| x.parse::<u64>().is_ok())
            })
    });
    assert!(
        sets_a_sequence,
        "no SET of the sequence number among the commands"
    );
}

/// An etcd protocol file on a real three-member cluster: the release by name, sent
/// again after its reply was lost, deletes the next holder's key — as the file's
/// model says; guarded by the put's revision, the same retry spares it.
#[test]
fn etcd_protocol_files_agree_with_their_models_when_a_release_reply_is_lost() {
    let (r, _) = run_kept(with_file("etcd-unlock-retry", "etcd-single-key.toml"));
    assert_agrees(&r);
    assert_eq!(r.lock, "txn create-if-absent; del by name");
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Violation);
    let (r, h) = run_kept(with_file(
        "etcd-unlock-retry-guarded",
        "etcd-single-key-guarded.toml",
    ));
    assert_agrees(&r);
    assert_eq!(check(&r, Property::NoForeignRelease), Verdict::Ok);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let guarded_txns = commands(&h, |c| c["txn"]["success"][0].get("delete").is_some());
    assert!(guarded_txns > 0, "no guarded delete among the requests");
}

/// A Redlock protocol file over five real nodes: the per-node steps sent to each, the
/// quorum counted — a node restarting empty lets a second client in, as the file's
/// model says. (A quorum of two breaks without any fault, but only where two clients'
/// broadcasts split the nodes, which a real run's timing does not always give — one
/// run in four kept mutual exclusion here: its model test is the proof, not a run.)
#[test]
fn a_redlock_protocol_file_agrees_with_its_model_over_five_nodes() {
    let (r, h) = run_kept(with_file("redlock-restart", "redlock.toml"));
    assert_agrees(&r);
    assert_eq!(
        r.lock,
        "Redlock: SET NX PX per node; compare-and-delete script"
    );
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    let evals = commands(&h, |c| c.get("eval").is_some());
    assert!(evals > 0, "no release script among the commands");
}
