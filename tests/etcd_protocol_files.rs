//! etcd protocol files — requests as data, `Txn` compares and branches included — run
//! in the etcd family's model: the catalog's single-key rows written as files reach
//! the rows' verdicts, story lengths and state counts; a check-then-set in two
//! requests is found broken without any fault; `locklab check --protocol` reads them
//! with the family's environments and refuses a bad one with its line.
#![cfg(feature = "model-check")]

use std::path::PathBuf;

use locklab_models::catalog::{Report, Verdict};
use locklab_models::protocol::{Described, EtcdProtocol, EtcdStepBuilder};
use locklab_models::registry::Property;

use crate::common::models;
use models::{inside, last_state, run, story};

use crate::common::cli;

fn file(name: &str) -> PathBuf {
    models::protocol_file(name)
}

fn load(name: &str) -> Described {
    models::load_protocol(name)
}

fn check(d: &Described, env: &str) -> Report {
    models::check_protocol(d, env)
}

/// The same graph as the row's: verdict, story lengths and distinct states.
fn same_as_row(name: &str, row: &str) {
    let mine = check(&load(name), row);
    let theirs = run(row);
    assert_eq!(mine.verdict, theirs.verdict, "{name} in {row}");
    let lengths = |r: &Report| -> Vec<(Property, usize)> {
        r.stories
            .iter()
            .map(|s| (s.property, s.steps.len()))
            .collect()
    };
    assert_eq!(lengths(&mine), lengths(&theirs), "{name} in {row}");
    assert_eq!(
        mine.stats.unique_states, theirs.stats.unique_states,
        "{name} in {row}"
    );
}

#[test]
fn the_catalogs_single_key_rows_as_protocol_files_reach_the_rows_verdicts() {
    same_as_row("etcd-single-key.toml", "etcd-unlock-retry");
    same_as_row("etcd-single-key-guarded.toml", "etcd-unlock-retry-guarded");
}

#[test]
fn a_release_by_name_sent_again_after_a_lost_reply_deletes_the_next_holders_key() {
    let r = check(&load("etcd-single-key.toml"), "drop");
    let text = story(&r, Property::NoForeignRelease);
    let lost = text
        .find("c0 (reply lost): del lock")
        .expect("the lost reply");
    let taken = text
        .find("put lock 'c1'")
        .or_else(|| text.find("put lock 'c2'"));
    let again = text
        .rfind("c0: del lock -> 1")
        .expect("the release sent again");
    assert!(
        taken.is_some_and(|t| lost < t && t < again),
        "lost reply, next holder's put, then the repeated delete: {text}"
    );
    assert!(text.contains("FAULT"), "{text}");
    // Guarded by the put's revision, the repeated release leaves the key alone.
    let guarded = check(&load("etcd-single-key-guarded.toml"), "drop");
    assert_eq!(guarded.verdict, Verdict::Holds);
}

#[test]
fn a_check_then_set_in_two_requests_lets_two_clients_in_without_any_fault() {
    let r = check(&load("etcd-get-then-put.toml"), "none");
    assert!(
        matches!(&r.verdict, Verdict::Violated(ps) if ps.contains(&Property::MutualExclusion)),
        "{:?}",
        r.verdict
    );
    let text = story(&r, Property::MutualExclusion);
    assert!(!text.contains("FAULT"), "{text}");
    assert_eq!(text.matches("get lock -> []").count(), 2, "{text}");
    assert_eq!(
        inside(&last_state(&r, Property::MutualExclusion)),
        2,
        "{text}"
    );
}

/// A lease lock loses mutual exclusion to a holder paused past its TTL however its
/// release is guarded: the story shows the lease expiring and the key deleted.
#[test]
fn a_session_lease_expires_under_a_paused_holder() {
    let r = check(&load("etcd-single-key-guarded.toml"), "pause");
    let text = story(&r, Property::MutualExclusion);
    assert!(
        text.contains("lease 1 expires, etcd deletes lock"),
        "{text}"
    );
    assert!(text.contains("PAUSED") || text.contains("pause"), "{text}");
    assert_eq!(inside(&last_state(&r, Property::MutualExclusion)), 2);
}

#[test]
fn the_builder_checks_as_the_file_does() {
    let p = EtcdProtocol::builder("txn lock")
        .lease(true)
        .acquire(
            EtcdStepBuilder::send(
                r#"txn = { compare = [{ create-revision = { key = "{key}", rev = 0 } }], success = [{ put = { key = "{key}", value = "{token}", lease = "{lease}" } }] }"#,
            )
            .granted("succeeded")
            .busy("failed"),
        )
        .release(EtcdStepBuilder::send(r#"delete = { key = "{key}" }"#).released("any"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let built = check(&Described::Etcd(p), "etcd-unlock-retry");
    let read = check(&load("etcd-single-key.toml"), "etcd-unlock-retry");
    assert_eq!(built.verdict, read.verdict);
    assert_eq!(built.stats.unique_states, read.stats.unique_states);
}

#[test]
fn check_protocol_runs_an_etcd_file_in_the_familys_environments() {
    let f = file("etcd-single-key-guarded.toml");
    let o = cli::locklab(&["check", "--protocol", f.to_str().unwrap_or_default()]);
    cli::assert_exit(&o, 1);
    let out = cli::stdout(&o);
    for env in [
        "@none: HOLDS",
        "@pause: VIOLATED",
        "@crash: HOLDS",
        "@partition: VIOLATED",
        "@failover: HOLDS",
        "@drop: HOLDS",
    ] {
        assert!(out.contains(env), "{env}: {out}");
    }
}

#[test]
fn a_bad_etcd_protocol_file_is_exit_2_naming_file_line_and_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"{token}\" } }\ngranted = \"ok\"\nwhen = 1\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n", "p.toml:5", "unknown field `when`"),
        ("family = \"etcd\"\n[[acquire]]\nsend = { set = { key = \"{key}\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n", "p.toml:2", "not an etcd request"),
        ("family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"x\", lease = \"{lease}\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n", "p.toml:2", "lease = true"),
        ("family = \"etcd\"\n[[acquire]]\nsend = { get = { key = \"{key}\" } }\ngranted = \"succeeded\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n", "p.toml:2", "never answers a get"),
    ];
    for (text, at, what) in cases {
        let p = dir.path().join("p.toml");
        std::fs::write(&p, text).expect("writes");
        let o = cli::locklab(&["check", "--protocol", p.to_str().unwrap_or_default()]);
        cli::assert_exit(&o, 2);
        let err = cli::stderr(&o);
        assert!(err.contains(at) && err.contains(what), "{at} {what}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A mistyped environment names the protocol's environments and the one it was near.
#[test]
fn an_unknown_environment_names_the_familys_environments() {
    let f = file("etcd-single-key.toml");
    let o = cli::locklab(&[
        "check",
        "--protocol",
        f.to_str().unwrap_or_default(),
        "pauze",
    ]);
    cli::assert_exit(&o, 2);
    let err = cli::stderr(&o);
    assert!(err.contains("did you mean pause?"), "{err}");
    assert!(
        err.contains("none, pause, crash, partition, failover, drop"),
        "{err}"
    );
}
