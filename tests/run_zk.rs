//! `locklab run` of the ZooKeeper rows on a real 3-server ensemble started by the
//! harness: each reproduces the model's verdict under the row's fault. A paused holder
//! is silenced by cutting its own proxies, so the ensemble expires its session on its
//! own clock, as it would for a stopped process.
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
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let r = run(&RunOptions::new(id), &mut |_| {}).unwrap_or_else(|e| panic!("{id}: {e}"));
    assert!(
        r.agreement.agrees && r.agreement.verdict != Verdict::Unknown,
        "{id}: run disagrees with the model or is unknown: {:#?}\n{:?}",
        r.agreement,
        r.timeline
    );
    assert!(r.topology.contains("ZooKeeper ensemble"), "{}", r.topology);
    // ZooKeeper expires sessions late (whole ticks), and the history says so: the lock
    // check never holds the gap against the lock.
    assert_ne!(
        check(&r, Property::LockLinearizability),
        Verdict::Violation,
        "{id}: {:#?}",
        r.report.checks
    );
    r
}

#[test]
fn a_holder_paused_past_its_session_timeout_shares_the_lock() {
    let r = agrees("zk-sequential-pause");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
}

#[test]
fn the_czxid_fences_the_paused_holders_late_write() {
    let r = agrees("zk-sequential-fenced");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    // The lock itself was shared: only the token kept the resource safe.
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

#[test]
fn a_write_checked_against_the_lock_node_in_one_multi_is_refused_once_the_node_is_gone() {
    let r = agrees("zk-check-write");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert!(r.topology.contains("lock's own servers"), "{}", r.topology);
}

#[test]
fn a_crashed_holders_node_goes_with_its_session() {
    let r = agrees("zk-sequential");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.expect("a crash was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
}
