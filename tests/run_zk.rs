//! `locklab run` of the ZooKeeper rows on a real 3-server ensemble started by the
//! harness: each reproduces the model's verdict under the row's fault. A paused or
//! partitioned holder is silenced by cutting its own proxies, so the ensemble expires
//! its session on its own clock, as it would for a stopped process; a lost create reply
//! is the proxy dropping the connection after forwarding the create.
#![cfg(feature = "backends")]

use std::sync::atomic::{AtomicU32, Ordering};

use locklab_implementations::zk::{LibraryLock, RecipeLock};
use locklab_jepsen::zk::plans::with_leader_killed;
use locklab_jepsen::zk::ZkClient;
use locklab_jepsen::{CustomLock, RunOptions, RunReport};
use locklab_models::registry::ScenarioId;
use locklab_models::zk::spec::{ZkCommand, ZkError, ZkReply};
use locklab_models::zk::Recipe;
use locklab_traces::check::{Property, Verdict};
use locklab_traces::format::{CommandValue, History, OpKind};

use crate::common::run_check;
use crate::common::runs;
use run_check::{check, nemesis};
use runs::{plan_kept, run_kept};

fn agrees_kept(id: &str) -> (RunReport, History) {
    let (r, h) = run_kept(RunOptions::new(id));
    assert_agrees(&r);
    (r, h)
}

fn agrees(id: &str) -> RunReport {
    agrees_kept(id).0
}

/// The run agrees with the model, on the ensemble; ZooKeeper's late expiry of sessions
/// is never held against the lock.
fn assert_agrees(r: &RunReport) {
    runs::assert_agrees(r);
    assert!(r.topology.contains("ZooKeeper ensemble"), "{}", r.topology);
    // ZooKeeper expires sessions late (whole ticks), and the history says so: the lock
    // check never holds the gap against the lock.
    assert_ne!(
        check(r, Property::LockLinearizability),
        Verdict::Violation,
        "{}: {:#?}",
        r.id,
        r.report.checks
    );
}

/// The history's ZooKeeper requests with their replies and clients.
fn requests(h: &History) -> Vec<(String, ZkCommand, Option<ZkReply>)> {
    h.events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Command)
        .filter_map(|(_, e)| {
            let v: CommandValue = e.value.as_ref()?.parse().ok()?;
            let c: ZkCommand = serde_json::from_value(v.command).ok()?;
            let r = v.reply.and_then(|r| serde_json::from_value(r).ok());
            Some((e.process.to_string(), c, r))
        })
        .collect()
}

/// Why each holder stopped working, as its `leave` says.
fn stopped(h: &History) -> Vec<String> {
    h.events
        .iter()
        .filter(|(_, e)| e.op == OpKind::Leave)
        .filter_map(|(_, e)| e.note.clone())
        .collect()
}

/// A custom lock: the recipe written as `recipe`, one owner per client.
fn recipe_lock(name: &str, recipe: Recipe) -> CustomLock {
    let next = AtomicU32::new(0);
    CustomLock::of(name, move |z: &ZkClient, _key| {
        let owner = format!("c{}", next.fetch_add(1, Ordering::SeqCst));
        Ok(Box::new(
            RecipeLock::new(z.session.clone(), &owner)
                .with_recipe(recipe)
                .unfenced(),
        ))
    })
}

fn finding(r: &RunReport, name: &str) -> serde_json::Map<String, serde_json::Value> {
    r.report
        .findings
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{}: no {name} finding: {:#?}", r.id, r.report.findings))
        .stats
        .clone()
}

#[test]
fn a_holder_paused_past_its_session_timeout_shares_the_lock() {
    let (r, h) = agrees_kept("zk-sequential-pause");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
    // The history holds every request: each client's session, its node and its release.
    let sent = requests(&h);
    for c in ["c0", "c1", "c2"] {
        assert!(
            sent.iter().any(|(p, cmd, reply)| p == c
                && matches!(
                    cmd,
                    ZkCommand::Create {
                        sequential: true,
                        ..
                    }
                )
                && matches!(reply, Some(ZkReply::Created { .. }))),
            "{c} made no lock node"
        );
    }
    // The stopped holder hears of its session's end when it comes back.
    assert!(
        sent.iter()
            .any(|(_, _, reply)| reply == &Some(ZkReply::Error(ZkError::SessionExpired))),
        "nobody was told SESSIONEXPIRED"
    );
}

#[test]
fn the_czxid_fences_the_paused_holders_late_write() {
    let r = agrees("zk-sequential-fenced");
    // Every server a host of its own, on ZooKeeper's well-known client port.
    runs::assert_on_hosts(&r, 2181, 3);
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    // The lock itself was shared: only the token kept the resource safe.
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

#[test]
fn a_write_checked_against_the_lock_node_in_one_multi_is_refused_once_the_node_is_gone() {
    let (r, h) = agrees_kept("zk-check-write");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert!(r.topology.contains("lock's own servers"), "{}", r.topology);
    // The late write is in the history as ZooKeeper refused it.
    assert!(
        requests(&h)
            .iter()
            .any(|(_, cmd, reply)| matches!(cmd, ZkCommand::Multi { .. })
                && matches!(
                    reply,
                    Some(
                        ZkReply::MultiFailed {
                            error: ZkError::NoNode,
                            ..
                        } | ZkReply::Error(ZkError::SessionExpired)
                    )
                )),
        "no refused multi"
    );
}

#[test]
fn a_crashed_holders_node_goes_with_its_session() {
    let r = agrees("zk-sequential");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.as_ref().expect("a crash was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
    // Every grant went to the lowest sequential node still waiting, as the model's
    // fifo says: agreement within the run.
    let grants = finding(&r, locklab_traces::backend::order::NAME)["grants"]
        .as_u64()
        .unwrap_or(0);
    assert!(grants >= 2, "{grants}");
    runs::assert_grants_in_request_order(&r);
    runs::assert_nobody_starved(&r);
}

/// A holder whose worker hangs while the client library keeps pinging: its session
/// lives, its node stays, and nobody is granted for the rest of the run.
#[test]
fn a_hung_workers_session_keeps_the_lock_for_ever() {
    let (r, h) = runs::stuck_behind_a_hung_holder("zk-hung-worker");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    // Nobody's session expired: the hung holder's pings went on.
    assert!(
        !requests(&h)
            .iter()
            .any(|(_, _, reply)| reply == &Some(ZkReply::Error(ZkError::SessionExpired))),
        "a session expired"
    );
}

/// The leader killed (kill -9) right after the first entry and restarted 2 s later:
/// the ensemble elects another, sessions move, and the crash row still holds.
#[test]
fn the_crash_row_holds_through_a_leader_kill_and_restart() {
    let plan = with_leader_killed(ScenarioId::ZkSequential).expect("the plan");
    let (r, h) = plan_kept(plan);
    assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let killed = nemesis(&h, "kill");
    assert!(
        killed.len() == 1 && killed[0].0.starts_with("zk") && killed[0].1.is_none(),
        "{killed:?}"
    );
    let restarted = nemesis(&h, "restart-killed");
    assert!(
        restarted.len() == 1 && restarted[0].1.is_none(),
        "{restarted:?}"
    );
    let l = r.liveness.expect("a crash was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
}

/// Cut off longer than its session, the holder's client says "disconnected" at once
/// and "expired" only later; the recipe that stops only at "expired" works on while the
/// ensemble, which expired the session on its own clock, grants the next waiter.
#[test]
fn a_partitioned_holder_that_waits_for_session_lost_shares_the_lock() {
    let (r, h) = agrees_kept("zk-until-lost");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    // The nemesis's request (any client), then the holder it hit.
    let cut = nemesis(&h, "client-partition");
    assert!(cut.iter().any(|(t, _, _)| t.starts_with('c')), "{cut:?}");
    let stopped = stopped(&h);
    assert!(
        stopped.len() == 1 && stopped[0].contains("Expired"),
        "the holder stops when told the session expired: {stopped:?}"
    );
}

/// The same partition, the recipe stopping at the first disconnection (Curator's
/// advice, the model's `stop_at_suspended`): it leaves before the session can have
/// expired, and mutual exclusion holds.
#[test]
fn a_partitioned_holder_that_stops_at_suspended_keeps_mutual_exclusion() {
    let (r, h) = run_kept(RunOptions {
        lock: Some(recipe_lock("recipe stopping at SUSPENDED", Recipe::CURATOR)),
        ..RunOptions::new("zk-until-lost")
    });
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let stopped = stopped(&h);
    assert!(
        stopped.len() == 1 && stopped[0].contains("Disconnected"),
        "{stopped:?}"
    );
}

/// The first create's reply is lost; retried blindly (no owner id in the name), it
/// leaves an orphan node, ephemeral of the client's live session: once the nodes ahead
/// of it are gone it is the lowest, and nobody is granted the lock for as long as the
/// run watches.
#[test]
fn a_blind_create_retry_leaves_an_orphan_that_blocks_everyone() {
    let (r, h) = agrees_kept("zk-create-conn-loss");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let lost = nemesis(&h, "lost-reply");
    assert_eq!(lost.len(), 1, "{lost:?}");
    // A client whose node was already ahead of the orphan may still get the lock once;
    // from then on nobody does.
    runs::assert_stuck_as_the_model_says(&r, "lost-reply");
    // The orphan and the blind retry's node are both the client's.
    let who = &lost[0].0;
    let made = requests(&h)
        .iter()
        .filter(|(p, cmd, _)| {
            p == who && matches!(cmd, ZkCommand::Create { path, .. } if path == "/lock/n-")
        })
        .count();
    assert!(made >= 2, "{who} created {made} times");
}

/// The default recipe (owner id in the node name) under the same lost reply finds the
/// node its create made and goes on: the lock is granted again.
#[test]
fn a_protected_create_retry_finds_its_node_and_the_lock_recovers() {
    let (r, _) = run_kept(RunOptions {
        lock: Some(recipe_lock(
            "recipe with the owner id in the node name",
            Recipe::CURATOR,
        )),
        ..RunOptions::new("zk-create-conn-loss")
    });
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let l = r.liveness.expect("the lost reply was recorded");
    assert!(!l.stuck && l.granted_after_ns.is_some(), "{}", l.summary);
}

/// Nine clients watching /lock's children: still a lock, but every release wakes every
/// waiter; watching the predecessor wakes one.
#[test]
fn the_herd_wakes_every_waiter_per_release_the_predecessor_watch_one() {
    let herd = agrees("zk-herd");
    assert_eq!(check(&herd, Property::MutualExclusion), Verdict::Ok);
    let h = finding(&herd, "watch wake-ups");
    let per = h["per_release"].as_f64().expect("a number");
    assert!(per >= 4.0, "the herd: {h:?}");
    let (pred, _) = run_kept(RunOptions {
        lock: Some(recipe_lock("predecessor watch", Recipe::CURATOR)),
        ..RunOptions::new("zk-herd")
    });
    assert_eq!(check(&pred, Property::MutualExclusion), Verdict::Ok);
    let p = finding(&pred, "watch wake-ups");
    let one = p["per_release"].as_f64().expect("a number");
    assert!(one <= 1.5 && one < per, "predecessor: {p:?}, herd: {h:?}");
}

/// The plain-znode spin lock: one node, created by whoever gets there first. Still a
/// lock, but every waiter watches that node, so each release wakes all of them.
#[test]
fn a_plain_znode_excludes_and_wakes_every_waiter() {
    let r = agrees("zk-plain-znode");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    let w = finding(&r, "watch wake-ups");
    let per = w["per_release"].as_f64().expect("a number");
    assert!(per > 1.5, "more than the predecessor watch's one: {w:?}");
}

/// zookeeper-client's own `Client::lock`, used as a plain lock, under the pause row:
/// nothing in it notices the session ending under the stopped holder, so the lock is
/// shared, as the model says of the recipe.
#[test]
fn the_librarys_lock_is_shared_under_the_pause_too() {
    let next = AtomicU32::new(0);
    let library = CustomLock::of("zookeeper-client Client::lock", move |z: &ZkClient, _| {
        Ok(Box::new(LibraryLock::new(
            z.session.client().clone(),
            &format!("c{}", next.fetch_add(1, Ordering::SeqCst)),
        )))
    });
    let (r, _) = run_kept(RunOptions {
        lock: Some(library),
        ..RunOptions::new("zk-sequential-pause")
    });
    assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
}

/// The leader cut off from its quorum on hosts of its own: the history names the
/// server cut off and the heal, and no two clients hold the lock — the quorum protects
/// it, as the model says (where Sentinel's split brain grants twice). The holder's 6 s
/// session outlives the 2.5 s the others take to notice the lost leader.
#[test]
fn an_isolated_leader_grants_nothing() {
    let (r, h) = agrees_kept("zk-leader-isolated");
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    assert!(
        r.topology.contains("each on a host of its own"),
        "{}",
        r.topology
    );
    let cut = nemesis(&h, "isolate-leader");
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert!(
        ["zk1", "zk2", "zk3"].contains(&cut[0].0.as_str()),
        "{cut:?}"
    );
    assert!(cut[0].1.is_none(), "the cut was made: {cut:?}");
    assert_eq!(nemesis(&h, "heal-isolation").len(), 1);
}

/// A random nemesis of leader changes (the leader killed, started again once the
/// others lead): every change names the leader it killed, each is one failover of the
/// model the run is held against, and the crash row's lock holds through them all.
#[test]
fn random_leader_kills_break_nothing_the_recipe_promises() {
    let killed = runs::random_leader_changes("zk-sequential", "kill-leader", "restart-killed", 1);
    assert!(
        killed
            .iter()
            .all(|k| ["zk1", "zk2", "zk3"].contains(&k.as_str())),
        "{killed:?}"
    );
}

/// The leader's clock leaps ahead (libfaketime) 300 ms into the first section: the
/// leader times the holder's session out though the holder runs and is connected,
/// deletes its node and the next client is granted while the holder works on, as the
/// model says. The history names the leader whose clock moved, answers a holder's
/// release SESSIONEXPIRED, and shows clients opening new sessions afterwards (as
/// Curator's client does after LOST). The lock check finds the double grant: the
/// session ended before its timeout had passed on any client's clock.
#[test]
fn a_leap_of_the_leaders_clock_shares_the_lock() {
    let (r, h) = run_kept(RunOptions::new("zk-clock-jump"));
    runs::assert_agrees(&r);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    assert_eq!(check(&r, Property::LockLinearizability), Verdict::Violation);
    let leap = nemesis(&h, "clock");
    assert!(
        leap.len() == 1
            && ["zk1", "zk2", "zk3"].contains(&leap[0].0.as_str())
            && leap[0].1.is_none(),
        "{leap:?}"
    );
    let reqs = requests(&h);
    assert!(
        reqs.iter()
            .any(|(_, cmd, reply)| matches!(cmd, ZkCommand::Delete { .. })
                && reply == &Some(ZkReply::Error(ZkError::SessionExpired))),
        "a holder's release finds its session expired"
    );
    let connects = reqs
        .iter()
        .filter(|(_, cmd, _)| matches!(cmd, ZkCommand::Connect { .. }))
        .count();
    assert!(
        connects > 3,
        "new sessions after the leap: {connects} connects"
    );
}
