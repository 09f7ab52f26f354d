//! Redisson-style reentrant lock: hold counts, watchdog renewal, and its stopping.

#![cfg(feature = "backends")]

use std::time::Duration;

use crate::common::{node, recorded_node, server};
use locklab_implementations::redis::{Recorder, RedisCommand, ReentrantLock};
use locklab_implementations::{Attempt, DistributedLock, Lease, LockError, LostReason};

const WAIT: Duration = Duration::from_secs(1);

fn is_renewal(c: &RedisCommand) -> bool {
    matches!(c, RedisCommand::EvalRedissonRenew { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentry_counts_and_frees_only_at_zero() {
    let s = server();
    let n = node(&s).await;
    let me = ReentrantLock::new(&n, "re");
    let other = ReentrantLock::new(&n, "re");
    let lease = Lease::Fixed(Duration::from_secs(10));
    let g1 = me.acquire(WAIT, lease).await.expect("first");
    let g2 = me
        .acquire(WAIT, lease)
        .await
        .expect("re-entry on the same handle");
    assert_eq!(me.holds(), 2);
    assert_eq!(s.cli(&["HGET", "re", me.owner()]), "2");
    match other.try_acquire(lease).await.expect("ask") {
        Attempt::Busy { retry_after, .. } => {
            assert!(
                retry_after.is_some_and(|t| t > Duration::from_secs(5)),
                "PTTL of the holder"
            )
        }
        Attempt::Acquired(_) => panic!("another owner got in"),
    }
    g2.release().await.expect("release one hold");
    assert_eq!(me.holds(), 1);
    assert_eq!(s.cli(&["EXISTS", "re"]), "1", "still held at count 1");
    assert!(matches!(
        other.try_acquire(lease).await,
        Ok(Attempt::Busy { .. })
    ));
    g1.release().await.expect("last release");
    assert_eq!(s.cli(&["EXISTS", "re"]), "0", "freed at count 0");
    let g = other
        .acquire(WAIT, lease)
        .await
        .expect("the other owner now");
    // A release by a handle that does not hold is refused by the server.
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_a_long_critical_section_alive_then_stops_on_release() {
    let s = server();
    let rec = Recorder::new();
    let n = recorded_node(&s, &rec).await;
    let lock = ReentrantLock::new(&n, "wd");
    let lease = Duration::from_millis(300);
    let g = lock
        .acquire(WAIT, Lease::Watchdog(lease))
        .await
        .expect("acquire");
    // Four leases long.
    tokio::time::sleep(lease * 4).await;
    assert!(!g.is_lost(), "the watchdog kept it");
    assert_eq!(s.cli(&["HEXISTS", "wd", lock.owner()]), "1");
    let renewals = rec
        .exchanges()
        .iter()
        .filter(|e| is_renewal(&e.command))
        .count();
    assert!(
        (8..=14).contains(&renewals),
        "every lease/3: {renewals} renewals"
    );
    g.release().await.expect("release");
    let released_at = rec.now_ns();
    tokio::time::sleep(lease * 2).await;
    let late: Vec<_> = rec
        .exchanges()
        .into_iter()
        .filter(|e| is_renewal(&e.command) && e.sent_ns > released_at)
        .collect();
    assert!(late.is_empty(), "renewals after release: {late:?}");
    assert_eq!(s.cli(&["EXISTS", "wd"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_watchdog_the_lease_expires_and_the_guard_knows() {
    let s = server();
    let n = node(&s).await;
    let lock = ReentrantLock::new(&n, "nowd");
    let other = ReentrantLock::new(&n, "nowd");
    let g = lock
        .acquire(WAIT, Lease::Fixed(Duration::from_millis(200)))
        .await
        .expect("acquire");
    assert!(!g.is_lost());
    let reason = tokio::time::timeout(Duration::from_secs(1), g.lost())
        .await
        .expect("reported in time");
    assert_eq!(reason, LostReason::Expired);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let g2 = other
        .acquire(WAIT, Lease::Fixed(Duration::from_secs(5)))
        .await
        .expect("expired lease lets others in");
    assert!(matches!(g.release().await, Err(LockError::NotHeld { .. })));
    drop(g2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_reports_a_lock_taken_away() {
    let s = server();
    let n = node(&s).await;
    let lock = ReentrantLock::new(&n, "taken");
    let g = lock
        .acquire(WAIT, Lease::Watchdog(Duration::from_millis(300)))
        .await
        .expect("acquire");
    s.cli(&["DEL", "taken"]);
    let reason = tokio::time::timeout(Duration::from_secs(1), g.lost())
        .await
        .expect("reported");
    assert_eq!(reason, LostReason::Refused);
}

/// `redis-reentrant-thread-id`: two "processes" whose threads share an id are one owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_id_owners_of_two_processes_collide() {
    let s = server();
    let n = node(&s).await;
    let p1 = ReentrantLock::with_thread_id_owner(&n, "tid", 1);
    let p2 = ReentrantLock::with_thread_id_owner(&n, "tid", 1);
    let lease = Lease::Fixed(Duration::from_secs(5));
    let g1 = p1.acquire(WAIT, lease).await.expect("p1");
    let g2 = p2
        .acquire(Duration::from_millis(100), lease)
        .await
        .expect("p2 're-enters' p1's lock");
    assert_eq!(s.cli(&["HGET", "tid", "1"]), "2");
    g2.release().await.expect("p2 releases");
    g1.release().await.expect("p1 releases");
}
