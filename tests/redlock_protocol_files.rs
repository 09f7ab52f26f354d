//! Redlock protocol files: one Redis protocol's per-node steps sent to N independent
//! nodes, granted with a quorum. The catalog's Redlock written as a file reaches every
//! Redlock row's verdict and story length; a quorum smaller than a majority lets two
//! clients in without any fault; Redlock-only keys and shapes are checked with lines.
#![cfg(feature = "model-check")]

use locklab_models::catalog::{Report, Verdict};
use locklab_models::protocol::Described;
use locklab_models::registry::Property;

use crate::common::models;
use models::{inside, last_state, run, story};

use crate::common::cli;

fn load(name: &str) -> Described {
    models::load_protocol(name)
}

fn check(d: &Described, env: &str) -> Report {
    models::check_protocol(d, env)
}

#[test]
fn the_catalogs_redlock_as_a_file_reaches_every_redlock_rows_verdict() {
    let d = load("redlock.toml");
    for row in [
        "redlock",
        "redlock-restart",
        "redlock-delayed-restart",
        "redlock-clock-jump",
        "redlock-pause",
    ] {
        let mine = check(&d, row);
        let theirs = run(row);
        assert_eq!(mine.verdict, theirs.verdict, "{row}");
        let lengths =
            |r: &Report| -> Vec<usize> { r.stories.iter().map(|s| s.steps.len()).collect() };
        assert_eq!(lengths(&mine), lengths(&theirs), "{row}");
    }
    // The file's own environments are the rows' faults.
    let restart = check(&d, "restart");
    let text = story(&restart, Property::MutualExclusion);
    assert!(
        text.contains("crashes") && text.contains("restarts, empty"),
        "{text}"
    );
    assert!(text.contains("SET lock c0 NX PX 2 on redis"), "{text}");
    assert_eq!(check(&d, "delayed-restart").verdict, Verdict::Holds);
}

#[test]
fn a_quorum_below_a_majority_lets_two_clients_in_without_any_fault() {
    let r = check(&load("redlock-quorum-two.toml"), "none");
    let text = story(&r, Property::MutualExclusion);
    assert!(!text.contains("FAULT"), "{text}");
    assert!(text.contains("Two quorums of 2 of 5 nodes"), "{text}");
    assert_eq!(
        inside(&last_state(&r, Property::MutualExclusion)),
        2,
        "{text}"
    );
}

#[test]
fn redlock_keys_and_shapes_are_checked_with_their_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("family = \"redis\"\nquorum = 2\n[[acquire]]\nsend = \"SET {key} {token} NX PX {lease_ms}\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:2", "`quorum` is Redlock's"),
        ("family = \"redlock\"\nquorum = 0\n[[acquire]]\nsend = \"SET {key} {token} NX PX {lease_ms}\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:2", "`quorum = 0`"),
        ("family = \"redlock\"\n[[acquire]]\nsend = \"SETNX {key} {token}\"\nnext = \"1\"\n[[acquire]]\nsend = \"PEXPIRE {key} {lease_ms}\"\ngranted = \"1\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:5", "one acquire step to each node"),
        ("family = \"redlock\"\nreentrant = true\n[[acquire]]\nsend = \"SET {key} {token} NX PX {lease_ms}\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:3", "no `reentrant`"),
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
