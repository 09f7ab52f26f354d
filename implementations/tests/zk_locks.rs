//! The ZooKeeper recipe lock on a real 3-server ensemble (started here, killed on drop):
//! it excludes and queues with ephemeral sequential nodes, fences with their `czxid`,
//! and a holder whose session ends loses its node so that the waiter is granted — which
//! is also why a holder that stops longer than its session timeout is not safe.

#![cfg(feature = "backends")]

use std::time::{Duration, Instant};

use locklab_implementations::zk::{
    connect, make_lock_dir, LibraryLock, RecipeLock, RequestLog, ZkSession,
};
use locklab_implementations::{Attempt, DistributedLock, Lease, LockGuard};
use locklab_models::zk::spec::{ZkCommand, ZkReply};
use locklab_servers::ZkEnsemble;

/// ZooKeeper bounds a session timeout to 2–20 ticks (tick 500 ms here).
const SESSION: Duration = Duration::from_secs(2);
const LEASE: Lease = Lease::Unbounded;

async fn session(z: &ZkEnsemble, log: &RequestLog) -> ZkSession {
    let s = ZkSession::connect(&z.connect_string(), SESSION, log.clone(), false)
        .await
        .expect("connects to the ensemble");
    make_lock_dir(&s).await.expect("/lock");
    s
}

async fn lock(z: &ZkEnsemble, owner: &str) -> RecipeLock {
    RecipeLock::new(session(z, &RequestLog::new()).await, owner)
}

/// `b` waits behind `a`'s hold `ga` (still waiting 300 ms on) and is granted once `a`
/// releases: `b` (whose session the grant lives in), its guard, and how long after the
/// release the grant came.
async fn handed_over<L: DistributedLock + 'static>(
    ga: LockGuard,
    b: L,
) -> (L, LockGuard, Duration) {
    let waiter = tokio::spawn(async move {
        let g = b
            .acquire(Duration::from_secs(10), LEASE)
            .await
            .expect("b after a's release");
        (Instant::now(), b, g)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "b waits while a holds");
    let released = Instant::now();
    ga.release().await.expect("a releases");
    let (granted, b, gb) = waiter.await.expect("the waiter");
    (b, gb, granted.duration_since(released))
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
    let (_b, gb, after) = handed_over(ga, b).await;
    let tb = gb.token().expect("b czxid token");
    assert!(tb > ta, "czxid grows from node to node: {ta} then {tb}");
    // The predecessor's watch wakes b: no polling interval between release and grant.
    assert!(
        after < Duration::from_secs(1),
        "b granted {after:?} after the release"
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

/// Every request the recipe sends is recorded in the spec's words, with the session the
/// server named: the create that made the node, the listing, the predecessor's watch,
/// the notification the waiter read, and the delete that woke it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipes_requests_are_recorded_in_the_specs_words() {
    let z = ZkEnsemble::three().unwrap_or_else(|e| panic!("cannot start ZooKeeper: {e}"));
    let log = RequestLog::new();
    let a = RecipeLock::new(session(&z, &log).await, "a");
    let b = RecipeLock::new(session(&z, &log).await, "b");
    let ga = a.acquire(Duration::from_secs(5), LEASE).await.expect("a");
    let waiter = tokio::spawn(async move {
        let g = b.acquire(Duration::from_secs(10), LEASE).await.expect("b");
        g.release().await.expect("b releases");
        b
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    ga.release().await.expect("a releases");
    let b = waiter.await.expect("the waiter");
    let sent: Vec<(ZkCommand, Option<ZkReply>)> = log
        .exchanges()
        .into_iter()
        .map(|e| (e.command, e.reply))
        .collect();
    let text: Vec<String> = log
        .exchanges()
        .iter()
        .map(|e| locklab_models::zk::spec::exchange_text(&e.command, e.reply.as_ref()))
        .collect();
    let has = |f: &dyn Fn(&ZkCommand, &Option<ZkReply>) -> bool| sent.iter().any(|(c, r)| f(c, r));
    assert!(
        has(&|c, r| matches!(c, ZkCommand::Connect { timeout: 2000 })
            && matches!(r, Some(ZkReply::Connected { .. }))),
        "{text:#?}"
    );
    assert!(
        has(
            &|c, r| matches!(c, ZkCommand::Create { path, ephemeral: true, sequential: true, .. } if path == "/lock/b-0-n-")
                && matches!(r, Some(ZkReply::Created { path, .. }) if path.starts_with("/lock/b-0-n-00000"))
        ),
        "{text:#?}"
    );
    assert!(
        has(
            &|c, r| matches!(c, ZkCommand::Exists { watch: true, session, .. } if *session == b.session_id())
                && matches!(r, Some(ZkReply::Stat(Some(_))))
        ),
        "b watches a's node: {text:#?}"
    );
    assert!(
        has(
            &|c, r| matches!(c, ZkCommand::Consume { session } if *session == b.session_id())
                && matches!(r, Some(ZkReply::Notified(n)) if n.len() == 1)
        ),
        "b read the watch a's delete fired: {text:#?}"
    );
    assert!(
        has(
            &|c, r| matches!(c, ZkCommand::Delete { session, .. } if *session == a.session_id())
                && r == &Some(ZkReply::Ok)
        ),
        "{text:#?}"
    );
    // Each exchange's events read back: the command and reply serialize both ways.
    for e in log.exchanges() {
        let v = serde_json::to_value(&e.command).expect("serializes");
        let back: ZkCommand = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, e.command);
    }
}

/// zookeeper-client's own lock (`Client::lock`, Curator's layout) behind the same trait:
/// it excludes, queues and hands the lock over, fenced by its node's czxid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_librarys_lock_excludes_queues_and_fences() {
    let z = ZkEnsemble::three().unwrap_or_else(|e| panic!("cannot start ZooKeeper: {e}"));
    let a = LibraryLock::new(connect(&z.connect_string(), SESSION).await.expect("a"), "a");
    let b = LibraryLock::new(connect(&z.connect_string(), SESSION).await.expect("b"), "b");
    let ga = a.acquire(Duration::from_secs(5), LEASE).await.expect("a");
    assert!(ga.key().starts_with("/lock/_c_"), "{}", ga.key());
    assert!(matches!(
        b.try_acquire(LEASE).await.expect("b"),
        Attempt::Busy { .. }
    ));
    let ta = ga.token().expect("a czxid token");
    let (_b, gb, _) = handed_over(ga, b).await;
    assert!(gb.token().expect("b czxid token") > ta);
    gb.release().await.expect("b releases");
}
