//! Redlock over five real nodes: a majority is enough, a minority is refused.

#![cfg(feature = "backends")]

mod common;

use std::time::Duration;

use common::{counter_run, node, server};
use locklab_implementations::redis::Redlock;
use locklab_implementations::testing::RedisServer;
use locklab_implementations::{DistributedLock, Lease, LockError};

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
