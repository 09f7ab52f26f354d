//! The `etcd-lock-expired-waiter` question, asked of the etcd that `ci/setup.sh`
//! installs: etcd issue 11456 reports a 3.4 server whose `Lock` RPC granted the lock to a
//! waiter whose lease had expired while it was queued (its key gone, so two clients
//! "held" the lock). The model (`etcd-lock-expired-waiter`) says what a correct server
//! does: check the waiter's own key before granting. Here a real cluster is asked: a
//! waiter queues in the `Lock` RPC on its lease, the lease is revoked while it waits, the
//! holder unlocks. Debian 12's etcd 3.4.23 grants the waiter anyway, on a key that is
//! gone — and then grants the same lock to a third client at once: two holders. This
//! test is the evidence of that finding (README, etcd section); it fails, saying so, on
//! a server that checks the waiter's key as the model's correct server does.

#![cfg(feature = "backends")]

use std::time::Duration;

use etcd_client::{Client, LockOptions};
use locklab_servers::EtcdCluster;

async fn client(c: &EtcdCluster) -> Client {
    Client::connect(c.endpoints(), None)
        .await
        .expect("connects to the cluster")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debians_etcd_grants_a_waiter_whose_lease_was_revoked_and_then_a_second_holder() {
    let c = EtcdCluster::three().unwrap_or_else(|e| panic!("cannot start etcd: {e}"));
    let mut a = client(&c).await;
    let mut b = client(&c).await;
    let la = a.lease_grant(30, None).await.expect("a's lease").id();
    let lb = b.lease_grant(30, None).await.expect("b's lease").id();
    let held = a
        .lock("l", Some(LockOptions::new().with_lease(la)))
        .await
        .expect("a is granted the free lock");
    let a_key = held.key().to_vec();

    // b queues behind a in the server-side Lock RPC.
    let mut queued = b.clone();
    let waiter = tokio::spawn(async move {
        queued
            .lock("l", Some(LockOptions::new().with_lease(lb)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "b must wait while a holds the lock");

    // b's lease goes while it waits (as when it expires): etcd deletes b's queued key.
    b.lease_revoke(lb).await.expect("revoke b's lease");
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.unlock(a_key).await.expect("a unlocks");

    let answer = tokio::time::timeout(Duration::from_secs(5), waiter).await;
    let granted_key = match answer {
        // Still waiting: not granted.
        Err(_) => None,
        Ok(joined) => match joined.expect("the waiter task") {
            Ok(resp) => Some(resp.key().to_vec()),
            // Refused (the lease is gone): not granted.
            Err(_) => None,
        },
    };
    let Some(key) = granted_key else {
        panic!(
            "this etcd refused (or kept waiting) the Lock RPC of a waiter whose lease was \
             revoked: it checks the waiter's own key, as the model's correct server does; \
             update the README's etcd-lock-expired-waiter finding"
        );
    };
    let b_key_exists = a.get(key.clone(), None).await.expect("get").count() > 0;
    assert!(
        !b_key_exists,
        "b was granted with key {} that still exists",
        String::from_utf8_lossy(&key)
    );
    // b believes it holds the lock (it never unlocked); a third client asks.
    let mut d = client(&c).await;
    let ld = d.lease_grant(30, None).await.expect("d's lease").id();
    let second = tokio::time::timeout(
        Duration::from_secs(3),
        d.lock("l", Some(LockOptions::new().with_lease(ld))),
    )
    .await;
    assert!(
        matches!(second, Ok(Ok(_))),
        "d was not granted while b's grant stands: {second:?}"
    );
}
