//! Command fidelity: what each lock sent to a real server, with the replies it got,
//! replayed through the Redis node spec of `locklab-models` (with the history checker's
//! linearizability search) — and found equal; and a recording that is not what a
//! server did (a forged reply, a forgotten command) is caught at the exchange where
//! it departs.

#![cfg(feature = "backends")]

use crate::common;

use locklab_traces::format::Backend;
use std::time::Duration;

use crate::common::{recorded_node, server};
use locklab_implementations::redis::{
    self, replay, Recorder, RedisReply, Redlock, ReplayError, SingleNode,
};
use locklab_implementations::{Attempt, DistributedLock, Lease};

const WAIT: Duration = Duration::from_secs(1);

/// Two owners take turns, with a refused attempt, a renewal where the protocol has one,
/// a late (refused) release after expiry, and a re-entry for reentrant locks.
async fn scenario(id: SingleNode, rec: &Recorder, s: &locklab_servers::RedisServer) {
    let n = recorded_node(s, rec).await;
    let key = format!("replay-{id}");
    let a = id.build(&n, &key);
    let b = id.build(&n, &key);
    let info = a.info();
    let lease = if id == SingleNode::SetNxNoTtl {
        Lease::Unbounded
    } else {
        Lease::Fixed(Duration::from_millis(1500))
    };
    let ga = a.acquire(WAIT, lease).await.expect("a");
    if info.reentrant && !info.teaching_only {
        let again = a.acquire(WAIT, lease).await.expect("re-entry");
        again.release().await.expect("one hold back");
    }
    match b.try_acquire(lease).await {
        Ok(Attempt::Busy { .. }) => {}
        // The thread-id bug: B *is* A to the server, so it re-enters.
        Ok(Attempt::Acquired(g)) if info.reentrant && info.teaching_only => {
            g.release().await.expect("b's re-entry")
        }
        other => panic!("{id}: B must be refused: {other:?}"),
    }
    let _ = ga.renew(Duration::from_millis(1500)).await;
    ga.release().await.expect("a releases");
    let gb = b.acquire(WAIT, lease).await.expect("b");
    gb.release().await.expect("b releases");
    if lease != Lease::Unbounded {
        // A lease that runs out, then a late release.
        let short = Lease::Fixed(Duration::from_millis(30));
        let g = a.acquire(WAIT, short).await.expect("a again");
        tokio::time::sleep(Duration::from_millis(60)).await;
        let _ = g.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_single_node_protocol_speaks_the_spec() {
    let s = server();
    for id in SingleNode::ALL {
        let rec = Recorder::new();
        scenario(id, &rec, &s).await;
        let ex = rec.exchanges();
        assert!(ex.len() >= 5, "{id}: {ex:?}");
        if let Err(e) = replay(&ex) {
            panic!("{id}: {e}\n{ex:#?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_redlock_node_speaks_the_spec() {
    let servers: Vec<_> = (0..3).map(|_| server()).collect();
    let rec = Recorder::new();
    let mut nodes = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let options = locklab_implementations::redis::NodeOptions {
            recorder: Some(rec.clone()),
            index: i,
            ..Default::default()
        };
        nodes.push(common::node_with(s, options).await);
    }
    let a = Redlock::new(&nodes, "replay-rl").expect("nodes");
    let b = Redlock::new(&nodes, "replay-rl").expect("nodes");
    let lease = Lease::Fixed(Duration::from_secs(2));
    let g = a.acquire(WAIT, lease).await.expect("a");
    assert!(matches!(
        b.try_acquire(lease).await,
        Ok(Attempt::Busy { .. })
    ));
    g.renew(Duration::from_secs(2)).await.expect("renew");
    g.release().await.expect("release");
    b.acquire(WAIT, lease)
        .await
        .expect("b")
        .release()
        .await
        .expect("release");
    let ex = rec.exchanges();
    for node in 0..3 {
        let mine: Vec<_> = ex.iter().filter(|e| e.node == node).cloned().collect();
        assert!(mine.len() >= 6, "node {node}");
        if let Err(e) = replay(&mine) {
            panic!("node {node}: {e}");
        }
    }
}

/// The sequence numbers the replay says cannot follow, or a panic when it accepts.
fn stuck(ex: &[redis::Exchange]) -> Vec<u64> {
    match replay(ex) {
        Err(ReplayError::Mismatch { stuck, .. }) => stuck,
        Ok(()) => panic!("accepted a recording no server made: {ex:#?}"),
    }
}

/// The replay has teeth: a reply the server did not give is caught, at that exchange.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_reply_is_a_mismatch() {
    let s = server();
    let rec = Recorder::new();
    scenario(SingleNode::Lua, &rec, &s).await;
    let mut ex = rec.exchanges();
    replay(&ex).expect("the true recording replays");
    // The refused attempt of B (SET NX → nil) claims success instead.
    let i = ex
        .iter()
        .position(|e| e.reply == Some(RedisReply::Nil))
        .expect("a refusal");
    ex[i].reply = Some(RedisReply::Ok);
    let seq = ex[i].seq;
    assert!(stuck(&ex).contains(&seq), "{seq}");
}

/// A command the server ran but the recording forgot (as a promoted replica forgets
/// what its old master acknowledged) is caught: without A's release, B's grant right
/// after it is one no single server gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_release_is_a_mismatch() {
    let s = server();
    let rec = Recorder::new();
    scenario(SingleNode::Lua, &rec, &s).await;
    let mut ex = rec.exchanges();
    let release = ex
        .iter()
        .position(|e| {
            matches!(e.command, redis::RedisCommand::EvalCompareAndDelete { .. })
                && e.reply == Some(RedisReply::Integer(1))
        })
        .expect("A's release");
    ex.remove(release);
    let b_grant = ex[release..]
        .iter()
        .find(|e| e.reply == Some(RedisReply::Ok))
        .expect("B's grant")
        .seq;
    let seq = b_grant;
    assert!(stuck(&ex).contains(&seq), "{seq}");
}

/// The fenced acquire (`SET NX PX` + `INCR` in one script): grants with strictly
/// increasing tokens and refusals with the holder's remaining lease replay equal, and a
/// forged token is caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fenced_acquire_replays_through_the_spec() {
    let s = server();
    let rec = Recorder::new();
    let n = recorded_node(&s, &rec).await;
    let a = redis::FencedLock::new(&n, "replay-fenced");
    let b = redis::FencedLock::new(&n, "replay-fenced");
    let lease = Lease::Fixed(Duration::from_secs(2));
    let g = a.acquire(WAIT, lease).await.expect("acquire");
    assert!(matches!(
        b.try_acquire(lease).await,
        Ok(Attempt::Busy { .. })
    ));
    g.release().await.expect("release");
    let g = b.acquire(WAIT, lease).await.expect("acquire");
    g.release().await.expect("release");
    let ex = rec.exchanges();
    replay(&ex).expect("the fenced lock's commands replay equal");
    let mut forged = ex.clone();
    let i = forged
        .iter()
        .rposition(|e| matches!(e.reply, Some(RedisReply::Integer(t)) if t > 0))
        .expect("a granted token");
    forged[i].reply = Some(RedisReply::Integer(7));
    let seq = forged[i].seq;
    assert!(stuck(&forged).contains(&seq), "{seq}");
    // B's refusal reports A's remaining lease as `-1 - PTTL`: within what the lease
    // can have left during the command it replays (the spec's `observe`), and a
    // remaining lease longer than the lease itself is caught.
    let busy = ex
        .iter()
        .position(|e| matches!(e.reply, Some(RedisReply::Integer(t)) if t < 0))
        .expect("B's refusal");
    let mut longer = ex.clone();
    longer[busy].reply = Some(RedisReply::Integer(-1 - 2_500));
    let seq = longer[busy].seq;
    assert!(stuck(&longer).contains(&seq), "{seq}");
}

/// The run-history path: every exchange of two contending clients becomes a `command`
/// event (as a run writes them), and the history checks as one Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_servers_command_events_are_one_redis() {
    use std::sync::{Arc, Mutex};

    use locklab_implementations::redis::history::event_recorder;
    use locklab_traces::check::{check_history, Options, Verdict};
    use locklab_traces::format::{Header, History, Process};

    let s = server();
    let base = std::time::Instant::now();
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut locks = Vec::new();
    for c in 0..2 {
        let sink = events.clone();
        let rec = event_recorder(Process::Client(c), base, move |e| {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(e)
        });
        let n = recorded_node(&s, &rec).await;
        locks.push(redis::LuaLock::new(&n, "events"));
    }
    let lease = Lease::Fixed(Duration::from_millis(200));
    for round in 0..3 {
        for lock in &locks {
            let g = lock
                .acquire(Duration::from_secs(2), lease)
                .await
                .expect("grant");
            if round == 2 {
                // The last grant runs out: its release is refused.
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            let _ = g.release().await;
        }
    }
    let events = events.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(events.len() >= 12, "{events:?}");
    // The events as a history file has them, from line 2 (the header is line 1).
    let history = History {
        source: "events".into(),
        header: Header::new("redis-lua", Backend::Redis),
        events: (2..).zip(events).collect(),
        ..History::default()
    };
    let report = check_history(&history, &Options::default()).expect("checks");
    let finding = report.findings.first().expect("a one-Redis finding");
    assert_eq!(finding.verdict, Verdict::Ok, "{finding:?}");
}
