//! Server faults: acquire never hangs on a dead server, and a guard notices when the
//! server under its critical section dies.

#![cfg(feature = "backends")]

use std::time::{Duration, Instant};

use crate::common::{node, server};
use locklab_implementations::redis::{FencedLock, LuaLock, ReentrantLock};
use locklab_implementations::{DistributedLock, Lease, LockError, LockGuard};
use locklab_servers::Server;

/// How long an acquire on a server that does not answer may wait.
const WAIT: Duration = Duration::from_millis(700);

/// An acquire that waits [`WAIT`]: what it gave, and how long it took.
async fn timed_acquire(lock: &dyn DistributedLock) -> (Result<LockGuard, LockError>, Duration) {
    let start = Instant::now();
    let r = lock
        .acquire(WAIT, Lease::Fixed(Duration::from_secs(5)))
        .await;
    (r, start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_on_a_dead_server_fails_within_its_wait() {
    let mut s = server();
    let n = node(&s).await;
    let locks: Vec<Box<dyn DistributedLock>> = vec![
        Box::new(LuaLock::new(&n, "down")),
        Box::new(ReentrantLock::new(&n, "down")),
        Box::new(FencedLock::new(&n, "down")),
    ];
    s.kill();
    for lock in &locks {
        let (r, took) = timed_acquire(lock.as_ref()).await;
        match r {
            Err(LockError::Timeout { last_error, .. }) => {
                assert!(
                    last_error.is_some(),
                    "{}: the cause is attached",
                    lock.info().protocol
                )
            }
            other => panic!(
                "{}: expected a timeout, got {other:?}",
                lock.info().protocol
            ),
        }
        // A hang guard, not a limit: "within its wait plus one attempt" is timing, and a
        // busy machine stalls for seconds; the lua_lock benchmark reports the figures.
        assert!(
            took < WAIT + Duration::from_secs(30),
            "{}: took {took:?}",
            lock.info().protocol
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_on_a_paused_server_fails_within_its_wait() {
    let s = server();
    let n = node(&s).await;
    let lock = LuaLock::new(&n, "paused");
    s.pause();
    let (r, took) = timed_acquire(&lock).await;
    s.resume();
    assert!(matches!(r, Err(LockError::Timeout { .. })), "{r:?}");
    // A hang guard, not a limit (see above).
    assert!(took < WAIT + Duration::from_secs(30), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_section_the_guard_reports_lost_ownership() {
    let mut s = server();
    let n = node(&s).await;
    let lease = Duration::from_millis(600);
    for lock in [
        Box::new(ReentrantLock::new(&n, "cut")) as Box<dyn DistributedLock>,
        Box::new(LuaLock::new(&n, "cut2")),
    ] {
        let g = lock
            .acquire(Duration::from_secs(1), Lease::Watchdog(lease))
            .await
            .expect("acquire");
        assert!(!g.is_lost());
        s.kill();
        // A hang guard, not a limit: when the loss is reported is timing, and timing
        // belongs in a benchmark (a busy machine stalls for seconds).
        let reason = tokio::time::timeout(Duration::from_secs(30), g.lost()).await;
        assert!(
            reason.is_ok(),
            "{}: lost ownership reported",
            lock.info().protocol
        );
        assert!(
            g.release().await.is_err(),
            "release cannot reach the server"
        );
        s.restart().expect("restart");
        // Give the connection manager a moment to reconnect for the next lock.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
