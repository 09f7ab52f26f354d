//! N tasks, one key, one shared counter: the correct locks keep it exact; each broken
//! lock loses updates once its fault is provoked.

#![cfg(feature = "backends")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{counter_run, node, server, CounterOutcome};
use locklab_implementations::redis::{
    DelUnconditionalLock, FencedLock, GetSetLock, GetThenDelLock, LuaLock, ReentrantLock,
    SetNxNoTtlLock, TimestampValueLock,
};
use locklab_implementations::{DistributedLock, Lease};

const TASKS: usize = 8;
const ROUNDS: u64 = 25;
const CS: Duration = Duration::from_millis(1);

type Run = (&'static str, Vec<Arc<dyn DistributedLock>>, Lease);

fn handles<L: DistributedLock + 'static>(make: impl Fn() -> L) -> Vec<Arc<dyn DistributedLock>> {
    (0..TASKS)
        .map(|_| Arc::new(make()) as Arc<dyn DistributedLock>)
        .collect()
}

/// Six rounds of critical sections longer than the lease, as a holder paused past its
/// lease has: 30 ms inside a 20 ms lease.
async fn paused_run(locks: Vec<Arc<dyn DistributedLock>>) -> CounterOutcome {
    let lease = Lease::Fixed(Duration::from_millis(20));
    counter_run(locks, 6, lease, Duration::from_millis(30)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correct_locks_keep_the_counter_exact() {
    let s = server();
    let n = node(&s).await;
    let lease = Lease::Fixed(Duration::from_secs(5));
    let runs: Vec<Run> = vec![
        ("redis-lua", handles(|| LuaLock::new(&n, "c-lua")), lease),
        (
            "redis-lua-fenced",
            handles(|| FencedLock::new(&n, "c-fenced")),
            lease,
        ),
        (
            "redis-reentrant",
            handles(|| ReentrantLock::new(&n, "c-reentrant")),
            Lease::Watchdog(Duration::from_secs(5)),
        ),
        (
            "redis-setnx-no-ttl",
            handles(|| SetNxNoTtlLock::new(&n, "c-setnx")),
            Lease::Unbounded,
        ),
        // Broken locks are still mutexes while their fault is absent.
        (
            "redis-del-unconditional",
            handles(|| DelUnconditionalLock::new(&n, "c-del")),
            lease,
        ),
    ];
    for (name, locks, lease) in runs {
        let out = counter_run(locks, ROUNDS, lease, CS).await;
        assert_eq!(out.counter, out.expected, "{name}: {out:?}");
        assert_eq!(out.max_inside, 1, "{name}: {out:?}");
        assert_eq!(out.refused_releases, 0, "{name}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_set_loses_updates_without_any_fault() {
    let s = server();
    let n = node(&s).await;
    let locks = handles(|| GetSetLock::new(&n, "c-getset").with_gap(Duration::from_millis(2)));
    let out = counter_run(locks, 10, Lease::Fixed(Duration::from_secs(5)), CS).await;
    assert!(out.max_inside > 1, "two holders expected: {out:?}");
    assert!(out.counter < out.expected, "lost updates expected: {out:?}");
}

/// Critical sections longer than the lease (a paused holder): the unconditional `DEL`
/// frees other holders' locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn del_unconditional_loses_updates_when_holders_outlive_their_lease() {
    let s = server();
    let n = node(&s).await;
    let out = paused_run(handles(|| DelUnconditionalLock::new(&n, "c-del-pause"))).await;
    assert!(out.max_inside > 1, "{out:?}");
    assert!(out.counter < out.expected, "{out:?}");
}

/// Same pause with the Lua lock (`redis-lua-pause`): the compare-and-delete stops the
/// foreign release (releases are refused), but the lease alone cannot stop two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_lock_paused_past_its_lease_lets_two_in_and_says_so_on_release() {
    let s = server();
    let n = node(&s).await;
    let out = paused_run(handles(|| LuaLock::new(&n, "c-lua-pause"))).await;
    assert!(out.max_inside > 1, "{out:?}");
    assert!(
        out.refused_releases > 0,
        "late releases must be refused: {out:?}"
    );
}

/// A releases after its lease ran out and B acquired; A's `GET` still sees... B's value,
/// unless A's pause falls *between* `GET` and `DEL`: then A deletes B's lock and C
/// gets in beside B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_then_del_releases_a_foreign_lock_when_paused_between_get_and_del() {
    let s = server();
    let n = node(&s).await;
    let lease = Lease::Fixed(Duration::from_millis(100));
    let a = GetThenDelLock::new(&n, "gtd").with_pause_before_del(Duration::from_millis(400));
    let b = GetThenDelLock::new(&n, "gtd");
    let c = GetThenDelLock::new(&n, "gtd");
    let ga = a
        .acquire(Duration::from_secs(1), lease)
        .await
        .expect("a acquires");
    let release_a = tokio::spawn(ga.release());
    // B takes the lock once A's lease has run out (during A's pause).
    let gb = b
        .acquire(Duration::from_secs(1), Lease::Fixed(Duration::from_secs(5)))
        .await
        .expect("b acquires");
    let ra = release_a.await.expect("join");
    assert!(ra.is_ok(), "A's DEL found a key to delete: B's ({ra:?})");
    let gc = c.acquire(Duration::from_millis(200), lease).await;
    assert!(gc.is_ok(), "C got in while B still holds: foreign release");
    assert!(!gb.is_lost(), "B believes it still holds");
    drop(gc);
    drop(gb);
}

/// Two grants in one tick of the clock share a value; the first holder, late, deletes
/// the second's lock with a perfectly atomic compare-and-delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamp_value_aba_releases_a_foreign_lock() {
    let s = server();
    let n = node(&s).await;
    let frozen = Arc::new(AtomicU64::new(1_700_000_000_000));
    let clock = {
        let f = frozen.clone();
        Arc::new(move || f.load(Ordering::SeqCst))
    };
    let a = TimestampValueLock::new(&n, "ts").with_clock(clock.clone());
    let b = TimestampValueLock::new(&n, "ts").with_clock(clock);
    let c = TimestampValueLock::new(&n, "ts");
    let ga = a
        .acquire(
            Duration::from_secs(1),
            Lease::Fixed(Duration::from_millis(50)),
        )
        .await
        .expect("a");
    tokio::time::sleep(Duration::from_millis(80)).await;
    let gb = b
        .acquire(Duration::from_secs(1), Lease::Fixed(Duration::from_secs(5)))
        .await
        .expect("b");
    assert!(ga.release().await.is_ok(), "A's release matched B's value");
    let gc = c
        .acquire(
            Duration::from_millis(200),
            Lease::Fixed(Duration::from_secs(1)),
        )
        .await;
    assert!(gc.is_ok(), "C got in beside B");
    drop((gb, gc));
}

/// `redis-lua-fenced`: holders paused past their lease still overlap, but a resource
/// that refuses writes with a token older than the newest it accepted loses nothing —
/// every accepted write is an exact increment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_keep_the_resource_safe_when_holders_outlive_their_lease() {
    use std::sync::Mutex;
    let s = server();
    let n = node(&s).await;
    // (highest token seen, value, stale writes refused)
    let resource = Arc::new(Mutex::new((0u64, 0u64, 0u64)));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let lock = FencedLock::new(&n, "c-fenced-pause");
        let resource = resource.clone();
        tasks.push(tokio::spawn(async move {
            let mut accepted = 0u64;
            for _ in 0..5 {
                let g = lock
                    .acquire(
                        Duration::from_secs(20),
                        Lease::Fixed(Duration::from_millis(20)),
                    )
                    .await
                    .expect("acquire");
                let token = g.token().expect("token");
                let read = resource.lock().expect("resource").1;
                tokio::time::sleep(Duration::from_millis(30)).await;
                {
                    let mut r = resource.lock().expect("resource");
                    // Accept only from the newest grant, and only over what it read.
                    if token >= r.0 && r.1 == read {
                        r.0 = token;
                        r.1 = read + 1;
                        accepted += 1;
                    } else {
                        r.2 += 1;
                    }
                }
                let _ = g.release().await;
            }
            accepted
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        accepted += t.await.expect("task");
    }
    let (_, value, refused) = *resource.lock().expect("resource");
    assert_eq!(value, accepted, "every accepted write counted exactly once");
    assert!(
        refused > 0,
        "the pause made stale writes, and the fence refused them"
    );
}
