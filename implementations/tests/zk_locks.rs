//! The ZooKeeper recipe lock on a real 3-server ensemble (started here, killed on drop):
//! it excludes and queues with ephemeral sequential nodes, fences with their `czxid`,
//! and a holder whose session ends loses its node so that the waiter is granted — which
//! is also why a holder that stops longer than its session timeout is not safe.

#![cfg(feature = "backends")]

use std::time::{Duration, Instant};

use locklab_implementations::zk::{connect, RecipeLock};
use locklab_implementations::{Attempt, DistributedLock, Lease};
use locklab_servers::ZkEnsemble;

/// ZooKeeper bounds a session timeout to 2–20 ticks (tick 500 ms here).
const SESSION: Duration = Duration::from_secs(2);
const LEASE: Lease = Lease::Unbounded;

async fn lock(z: &ZkEnsemble, owner: &str) -> RecipeLock {
    let client = connect(&z.connect_string(), SESSION)
        .await
        .expect("connects to the ensemble");
    RecipeLock::new(client, owner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipe_excludes_queues_and_fences_by_czxid() {
    let z = ZkEnsemble::three().unwrap_or_else(|e| panic!("cannot start ZooKeeper: {e}"));
    let a = lock(&z, "a").await;
    let b = lock(&z, "b").await;
    let Attempt::Acquired(ga) = a.try_acquire(LEASE).await.expect("a") else {
        panic!("a should be granted the free lock");
    };
    // b queues (its node stays, behind a's) and is refused while a holds.
    assert!(matches!(
        b.try_acquire(LEASE).await.expect("b"),
        Attempt::Busy { .. }
    ));
    let ta = ga.token().expect("a czxid token");
    let waiter = tokio::spawn(async move {
        let g = b
            .acquire(Duration::from_secs(10), LEASE)
            .await
            .expect("b after a's release");
        (Instant::now(), g.token(), b, g)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "b waits while a holds");
    let released = Instant::now();
    ga.release().await.expect("a releases");
    let (granted, tb, _b, gb) = waiter.await.expect("the waiter");
    let tb = tb.expect("b czxid token");
    assert!(tb > ta, "czxid grows from node to node: {ta} then {tb}");
    // The predecessor's watch wakes b: no polling interval between release and grant.
    assert!(
        granted.duration_since(released) < Duration::from_secs(1),
        "b granted {:?} after the release",
        granted.duration_since(released)
    );
    gb.release().await.expect("b releases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_session_closes_loses_its_node_and_the_waiter_is_granted() {
    let z = ZkEnsemble::three().unwrap_or_else(|e| panic!("cannot start ZooKeeper: {e}"));
    let a = lock(&z, "a").await;
    let b = lock(&z, "b").await;
    let Attempt::Acquired(ga) = a.try_acquire(LEASE).await.expect("a") else {
        panic!("a should be granted the free lock");
    };
    // a gives up holding without a release and closes its session (a graceful exit;
    // a crash would leave the node until the session timeout).
    ga.abandon();
    drop(a);
    let gb = b
        .acquire(Duration::from_secs(10), LEASE)
        .await
        .expect("b once a's session is gone and its node with it");
    gb.release().await.expect("b releases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_ensemble_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        connect(&format!("127.0.0.1:{port}"), SESSION),
    )
    .await;
    match r {
        Ok(Err(e)) => assert!(!e.to_string().is_empty()),
        Ok(Ok(_)) => panic!("connected to nothing"),
        // The client keeps retrying an endpoint that never answers: bounded here.
        Err(_) => {}
    }
}
