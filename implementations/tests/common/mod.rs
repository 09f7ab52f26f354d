//! Shared by the backend tests: servers, nodes, and the shared-counter workload.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::redis::{NodeOptions, Recorder, RedisNode};
use locklab_implementations::{DistributedLock, Lease, LockError};
use locklab_servers::{RedisServer, Server};

/// A fresh server; a missing binary fails the test with the reason.
pub fn server() -> RedisServer {
    match RedisServer::start() {
        Ok(s) => s,
        Err(e) => panic!("cannot start redis-server: {e}"),
    }
}

pub async fn node(s: &RedisServer) -> RedisNode {
    node_with(s, NodeOptions::default()).await
}

pub async fn recorded_node(s: &RedisServer, rec: &Recorder) -> RedisNode {
    node_with(
        s,
        NodeOptions {
            recorder: Some(rec.clone()),
            ..NodeOptions::default()
        },
    )
    .await
}

pub async fn node_with(s: &RedisServer, options: NodeOptions) -> RedisNode {
    match RedisNode::connect(&s.addr(), options).await {
        Ok(n) => n,
        Err(e) => panic!("cannot connect to {}: {e}", s.addr()),
    }
}

/// What the counter workload saw.
#[derive(Debug)]
pub struct CounterOutcome {
    /// The counter at the end.
    pub counter: u64,
    /// Increments done (= what the counter should be).
    pub expected: u64,
    /// Most tasks ever inside their critical sections at once.
    pub max_inside: usize,
    /// Releases the lock refused (`NotHeld`): the holder had lost it.
    pub refused_releases: u64,
}

/// Every lock handle in `locks` runs `rounds` critical sections; each reads a shared
/// counter, sleeps `cs`, and writes it back plus one — lost updates show as a counter
/// below `expected`.
pub async fn counter_run(
    locks: Vec<Arc<dyn DistributedLock>>,
    rounds: u64,
    lease: Lease,
    cs: Duration,
) -> CounterOutcome {
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for lock in &locks {
        let lock = lock.clone();
        let (counter, inside, max_inside, refused) = (
            counter.clone(),
            inside.clone(),
            max_inside.clone(),
            refused.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = match lock.acquire(Duration::from_secs(20), lease).await {
                    Ok(g) => g,
                    Err(e) => panic!("acquire failed: {e}"),
                };
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                let v = counter.load(Ordering::SeqCst);
                tokio::time::sleep(cs).await;
                counter.store(v + 1, Ordering::SeqCst);
                inside.fetch_sub(1, Ordering::SeqCst);
                match guard.release().await {
                    Ok(()) => {}
                    Err(LockError::NotHeld { .. }) => {
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => panic!("release failed: {e}"),
                }
            }
        }));
    }
    for t in tasks {
        if let Err(e) = t.await {
            panic!("task failed: {e}");
        }
    }
    CounterOutcome {
        counter: counter.load(Ordering::SeqCst),
        expected: rounds * locks.len() as u64,
        max_inside: max_inside.load(Ordering::SeqCst),
        refused_releases: refused.load(Ordering::SeqCst),
    }
}
