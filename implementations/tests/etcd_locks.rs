//! The etcd recipe lock on a real 3-node etcd cluster (started here, killed on drop):
//! it excludes and fences with the key's create revision while nothing goes wrong; a
//! holder whose keep-alives stop loses its key after the TTL, the next waiter is
//! granted with a larger token, and the old holder's guarded write is refused; every
//! request is in the log with its window.

#![cfg(feature = "backends")]

use std::time::Duration;

use locklab_implementations::etcd::{EtcdSession, RecipeLock, RequestLog};
use locklab_implementations::{Attempt, DistributedLock, Lease};
use locklab_models::etcd::spec::{EtcdCommand, EtcdReply};
use locklab_servers::EtcdCluster;

const TTL: Duration = Duration::from_secs(2);

fn cluster() -> EtcdCluster {
    EtcdCluster::three().unwrap_or_else(|e| panic!("cannot start etcd: {e}"))
}

async fn lock(c: &EtcdCluster, log: &RequestLog, owner: &str) -> RecipeLock {
    let s = EtcdSession::connect(&c.endpoints(), log.clone())
        .await
        .expect("connect");
    RecipeLock::new(s, owner, TTL)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipe_excludes_queues_and_fences_by_create_revision() {
    let c = cluster();
    let log = RequestLog::default();
    let a = lock(&c, &log, "a").await;
    let b = lock(&c, &log, "b").await;
    let Attempt::Acquired(ga) = a.try_acquire(Lease::Fixed(TTL)).await.expect("a") else {
        panic!("the first attempt on a free lock is granted");
    };
    assert!(matches!(
        b.try_acquire(Lease::Fixed(TTL)).await.expect("b"),
        Attempt::Busy { .. }
    ));
    let ta = ga.token().expect("a token");
    assert!(a.guarded_put(ta, "counter", "1").await.expect("put"));
    ga.release().await.expect("release");
    let gb = b
        .acquire(Duration::from_secs(5), Lease::Fixed(TTL))
        .await
        .expect("b after a's release");
    let tb = gb.token().expect("b token");
    assert!(tb > ta, "create revisions grow: {ta} then {tb}");
    gb.release().await.expect("release");
    let reqs = log.exchanges();
    assert!(reqs.iter().all(|r| r.sent_ns <= r.done_ns));
    assert!(reqs
        .iter()
        .any(|r| matches!(r.command, EtcdCommand::Txn { .. })
            && matches!(
                r.reply,
                Some(EtcdReply::Txn {
                    succeeded: true,
                    ..
                })
            )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_without_keep_alives_loses_its_key_and_its_guarded_write() {
    let c = cluster();
    let log = RequestLog::default();
    let a = lock(&c, &log, "a").await;
    let b = lock(&c, &log, "b").await;
    let Attempt::Acquired(ga) = a.try_acquire(Lease::Fixed(TTL)).await.expect("a") else {
        panic!("granted");
    };
    let ta = ga.token().expect("token");
    // As when a is paused or cut off: its keep-alives stop, the lease runs out.
    a.stop_keep_alive();
    let gb = b
        .acquire(Duration::from_secs(10), Lease::Fixed(TTL))
        .await
        .expect("b is granted once a's lease expired");
    let tb = gb.token().expect("token");
    assert!(tb > ta);
    assert!(!a.guarded_put(ta, "counter", "stale").await.expect("txn"));
    assert!(b.guarded_put(tb, "counter", "1").await.expect("txn"));
    gb.release().await.expect("release");
    ga.abandon();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_of_a_lease_that_is_gone_is_answered_lease_not_found() {
    let c = cluster();
    let s = EtcdSession::connect(&c.endpoints(), RequestLog::default())
        .await
        .expect("connect");
    let EtcdReply::Granted { lease, .. } =
        s.exec(EtcdCommand::Grant { ttl: 2 }).await.expect("grant")
    else {
        panic!("a grant is answered with its lease");
    };
    assert_eq!(
        s.exec(EtcdCommand::Revoke { lease }).await.expect("revoke"),
        EtcdReply::Revoked
    );
    let answer = s.exec(EtcdCommand::KeepAlive { lease }).await;
    assert!(matches!(answer, Ok(EtcdReply::LeaseNotFound)), "{answer:?}");
}
