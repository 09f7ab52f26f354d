//! `redis-lua`'s local hand-off against a real server: tasks of one process pass the
//! key with compare-and-transfer, the counter stays exact, the server agrees with the
//! spec on every pass, and waiters that give up, are cancelled, or queue behind a
//! holder that crashed or lost the key never leave the lock stuck.

#![cfg(feature = "backends")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{counter_run, node, recorded_node, server};
use locklab_implementations::redis::{replay, LuaLock, Recorder, RedisCommand, RedisReply};
use locklab_implementations::{Attempt, DistributedLock, Lease, LockError};

const LEASE: Lease = Lease::Fixed(Duration::from_secs(5));

fn is_transfer(c: &RedisCommand) -> bool {
    matches!(c, RedisCommand::EvalCompareAndTransfer { .. })
}

/// One thread, so the recorder's order is the order commands went on the connection.
#[tokio::test]
async fn sixteen_tasks_pass_the_key_locally_and_the_server_agrees() {
    let s = server();
    let rec = Recorder::new();
    let n = recorded_node(&s, &rec).await;
    let locks: Vec<Arc<dyn DistributedLock>> = (0..16)
        .map(|_| {
            Arc::new(LuaLock::new(&n, "handoff-counter").with_handoff()) as Arc<dyn DistributedLock>
        })
        .collect();
    let out = counter_run(locks, 10, LEASE, Duration::from_millis(1)).await;
    assert_eq!(out.counter, out.expected, "{out:?}");
    assert_eq!(out.max_inside, 1, "{out:?}");
    assert_eq!(out.refused_releases, 0, "{out:?}");

    let log = rec.exchanges();
    let transfers: Vec<_> = log.iter().filter(|e| is_transfer(&e.command)).collect();
    assert!(
        transfers.len() as u64 >= out.expected / 2,
        "most grants should be passes: {} of {}",
        transfers.len(),
        out.expected
    );
    assert!(
        transfers
            .iter()
            .all(|e| e.reply == Some(RedisReply::Integer(1))),
        "every pass confirmed"
    );
    let set_nx = log
        .iter()
        .filter(|e| matches!(e.command, RedisCommand::Set { .. }))
        .count();
    assert!(
        set_nx < 40,
        "queued waiters do not poll: {set_nx} SET NX for {} grants",
        out.expected
    );
    if let Err(e) = replay(&log) {
        panic!("the passes do not replay through the spec: {e}");
    }
}

/// The next owner starts on the holder's validity; the confirmed pass extends it to a
/// lease of its own, counted from the pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_is_extended_to_the_new_owners_lease() {
    let s = server();
    let n = node(&s).await;
    let a = LuaLock::new(&n, "handoff-validity").with_handoff();
    let b = LuaLock::new(&n, "handoff-validity").with_handoff();
    let ga = a.acquire(Duration::from_secs(1), LEASE).await.expect("a");
    let a_until = ga.valid_until().expect("a lease");
    let waiter = tokio::spawn(async move {
        let g = b.acquire(Duration::from_secs(5), LEASE).await;
        (b, g)
    });
    // Well inside the queue's 50 ms patience, so b is still queued when a leaves.
    tokio::time::sleep(Duration::from_millis(20)).await;
    ga.release().await.expect("a passes");
    let (_b, gb) = waiter.await.expect("join");
    let gb = gb.expect("b got the pass");
    let b_until = gb.valid_until().expect("b lease");
    assert!(
        b_until > a_until + Duration::from_millis(10),
        "b's validity must be its own: {b_until:?} vs a's {a_until:?}"
    );
    gb.release().await.expect("b releases");
    assert!(matches!(
        a.try_acquire(LEASE).await,
        Ok(Attempt::Acquired(_))
    ));
}

/// The local owner waits for a holder in another process; a task queued behind it
/// takes over when it gives up, and gets the key when the other process lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_takes_over_when_the_local_owner_gives_up() {
    let s = server();
    let ours = node(&s).await;
    let theirs = node(&s).await;
    let remote = LuaLock::new(&theirs, "handoff-giveup").with_handoff();
    let g_remote = remote
        .acquire(Duration::from_secs(1), LEASE)
        .await
        .expect("remote");
    let first = LuaLock::new(&ours, "handoff-giveup").with_handoff();
    let second = LuaLock::new(&ours, "handoff-giveup").with_handoff();
    let second_owner = second.owner().to_string();
    let impatient = tokio::spawn(async move {
        first
            .acquire(Duration::from_millis(300), LEASE)
            .await
            .map(drop)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let patient = tokio::spawn(async move {
        let r = second.acquire(Duration::from_secs(10), LEASE).await;
        (Instant::now(), r)
    });
    let gave_up = impatient.await.expect("join");
    assert!(
        matches!(gave_up, Err(LockError::Timeout { .. })),
        "{gave_up:?}"
    );
    assert_eq!(
        ours.local_queue("handoff-giveup").holder(),
        Some(second_owner),
        "the queued waiter is the local owner now"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released_at = Instant::now();
    g_remote.release().await.expect("remote releases");
    let (got_at, r) = patient.await.expect("join");
    let g = r.expect("the second waiter gets the key");
    assert!(got_at >= released_at, "not before the other process let go");
    assert!(
        got_at - released_at < Duration::from_secs(2),
        "it kept polling as the new local owner: {:?}",
        got_at - released_at
    );
    g.release().await.expect("release");
}

/// A waiter whose acquire is dropped while queued leaves the queue: the holder's
/// release then frees the key rather than passing it to nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_waiter_leaves_no_stuck_lock() {
    let s = server();
    let n = node(&s).await;
    let a = LuaLock::new(&n, "handoff-cancel").with_handoff();
    let b = LuaLock::new(&n, "handoff-cancel").with_handoff();
    let ga = a.acquire(Duration::from_secs(1), LEASE).await.expect("a");
    let cancelled = tokio::time::timeout(
        Duration::from_millis(30),
        b.acquire(Duration::from_secs(5), LEASE),
    )
    .await;
    assert!(cancelled.is_err(), "b was still waiting");
    ga.release().await.expect("a releases");
    let other_process = node(&s).await;
    let c = LuaLock::new(&other_process, "handoff-cancel").with_handoff();
    assert!(
        matches!(c.try_acquire(LEASE).await, Ok(Attempt::Acquired(_))),
        "the key is free for another process"
    );
}

/// A local holder that crashed (abandoned its guard) blocks its queue only until its
/// lease runs out: the waiters keep asking the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_outlive_an_abandoned_local_holder() {
    let s = server();
    let n = node(&s).await;
    let a = LuaLock::new(&n, "handoff-crash").with_handoff();
    let b = LuaLock::new(&n, "handoff-crash").with_handoff();
    let short = Lease::Fixed(Duration::from_millis(200));
    a.acquire(Duration::from_secs(1), short)
        .await
        .expect("a")
        .abandon();
    let start = Instant::now();
    let gb = b
        .acquire(Duration::from_secs(3), LEASE)
        .await
        .expect("b after a's lease");
    assert!(
        start.elapsed() >= Duration::from_millis(150),
        "{:?}",
        start.elapsed()
    );
    gb.release().await.expect("b releases");
}

/// A holder that kept the key past its lease cannot pass it: its release says
/// `NotHeld`, and the waiter gets the key from the server, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_past_its_lease_passes_nothing() {
    let s = server();
    let rec = Recorder::new();
    let n = recorded_node(&s, &rec).await;
    let a = LuaLock::new(&n, "handoff-late").with_handoff();
    let b = LuaLock::new(&n, "handoff-late").with_handoff();
    let ga = a
        .acquire(
            Duration::from_secs(1),
            Lease::Fixed(Duration::from_millis(100)),
        )
        .await
        .expect("a");
    tokio::time::sleep(Duration::from_millis(80)).await;
    let waiter = tokio::spawn(async move {
        let g = b.acquire(Duration::from_secs(3), LEASE).await;
        (b, g)
    });
    tokio::time::sleep(Duration::from_millis(40)).await;
    let late = ga.release().await;
    assert!(matches!(late, Err(LockError::NotHeld { .. })), "{late:?}");
    let (_b, gb) = waiter.await.expect("join");
    let gb = gb.expect("b gets the key");
    assert!(!gb.is_lost());
    gb.release().await.expect("b releases");
    if let Err(e) = replay(&rec.exchanges()) {
        panic!("{e}");
    }
}
