//! Redlock over five real nodes: a majority is enough, a minority is refused.

#![cfg(feature = "backends")]

use std::time::Duration;

use crate::common::{counter_run, node, server};
use locklab_implementations::redis::Redlock;
use locklab_implementations::{DistributedLock, Lease, LockError};
use locklab_servers::{RedisServer, Server};

async fn cluster() -> (
    Vec<RedisServer>,
    Vec<locklab_implementations::redis::RedisNode>,
) {
    let servers: Vec<RedisServer> = (0..5).map(|_| server()).collect();
    let mut nodes = Vec::new();
    for s in &servers {
        nodes.push(node(s).await);
    }
    (servers, nodes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_with_one_or_two_nodes_down_and_refuses_with_three() {
    let (mut servers, nodes) = cluster().await;
    let lease = Lease::Fixed(Duration::from_secs(5));
    for down in 0..=3usize {
        if down > 0 {
            servers[down - 1].kill();
        }
        let lock = Redlock::new(&nodes, "rl").expect("nodes");
        let r = lock.acquire(Duration::from_millis(1500), lease).await;
        if down <= 2 {
            let g = r.unwrap_or_else(|e| panic!("{down} down: {e}"));
            assert!(!g.is_lost());
            let alive: Vec<_> = servers.iter().filter(|s| s.pid().is_some()).collect();
            let holding = alive
                .iter()
                .filter(|s| s.cli(&["GET", "rl"]) == lock.info().owner)
                .count();
            assert_eq!(holding, alive.len(), "{down} down: set on every live node");
            g.release().await.expect("release on the majority");
            assert!(
                alive.iter().all(|s| s.cli(&["EXISTS", "rl"]) == "0"),
                "released everywhere"
            );
        } else {
            match r {
                Err(LockError::Timeout { last_error, .. }) => {
                    assert!(
                        matches!(
                            last_error.as_deref(),
                            Some(LockError::NoQuorum {
                                granted: 2,
                                needed: 3,
                                ..
                            })
                        ),
                        "{last_error:?}"
                    );
                }
                other => panic!("3 down must be refused: {other:?}"),
            }
            let alive: Vec<_> = servers.iter().filter(|s| s.pid().is_some()).collect();
            assert!(
                alive.iter().all(|s| s.cli(&["EXISTS", "rl"]) == "0"),
                "partial grants released"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_a_shared_counter_exact() {
    let (_servers, nodes) = cluster().await;
    let locks: Vec<std::sync::Arc<dyn DistributedLock>> = (0..6)
        .map(|_| std::sync::Arc::new(Redlock::new(&nodes, "rl-counter").expect("nodes")) as _)
        .collect();
    let out = counter_run(
        locks,
        10,
        Lease::Fixed(Duration::from_secs(5)),
        Duration::from_millis(1),
    )
    .await;
    assert_eq!(out.counter, out.expected, "{out:?}");
    assert_eq!(out.max_inside, 1, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_competing_holder_makes_the_attempt_busy() {
    let (_servers, nodes) = cluster().await;
    let a = Redlock::new(&nodes, "rl-busy").expect("nodes");
    let b = Redlock::new(&nodes, "rl-busy").expect("nodes");
    let lease = Lease::Fixed(Duration::from_secs(5));
    let g = a.acquire(Duration::from_secs(1), lease).await.expect("a");
    assert!(matches!(
        b.acquire(Duration::from_millis(200), lease).await,
        Err(LockError::Timeout { .. })
    ));
    g.release().await.expect("release");
    b.acquire(Duration::from_secs(1), lease)
        .await
        .expect("b after a");
}

/// `redlock-restart`: a node that restarts without persistence forgets the grant, and a
/// second client assembles a majority from it and a node that never saw the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_without_data_lets_a_second_holder_in() {
    let mut servers: Vec<RedisServer> = (0..3).map(|_| server()).collect();
    let mut nodes = Vec::new();
    for s in &servers {
        nodes.push(node(s).await);
    }
    let lease = Lease::Fixed(Duration::from_secs(10));
    // Node 2 still holds a crashed client's grant, so A wins exactly nodes 0 and 1.
    // (Not a dead node: a command that got no answer may still run once the node is
    // back — redis-rs queues it while reconnecting — and then A would hold node 2 too.)
    servers[2].cli(&["SET", "rl-restart", "crashed-client", "PX", "300"]);
    let a = Redlock::new(&nodes, "rl-restart").expect("nodes");
    let ga = a
        .acquire(Duration::from_secs(2), lease)
        .await
        .expect("a on nodes 0 and 1");
    assert_eq!(servers[2].cli(&["GET", "rl-restart"]), "crashed-client");
    tokio::time::sleep(Duration::from_millis(350)).await;
    servers[1].restart().expect("restart node 1 empty");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = Redlock::new(&nodes, "rl-restart").expect("nodes");
    let gb = b.acquire(Duration::from_secs(2), lease).await;
    assert!(gb.is_ok(), "b on nodes 1 and 2: {gb:?}");
    assert!(!ga.is_lost(), "a still believes it holds: two holders");
}
