//! Which client lock an etcd scenario uses, and how one client builds it from its
//! session: the `concurrency.Mutex` recipe (its guards with or without the create
//! revision as fencing token, the protected write either the harness's counter or a
//! `Txn` on the cluster guarded by the lock key), the single-key lock released by name
//! (or guarded by revision), and etcd's own `Lock` RPC.

use std::time::Duration;

use locklab_implementations::etcd::{EtcdSession, LockRpcLock, RecipeLock, SingleKeyLock};
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::etcd::spec::{COUNTER_KEY, LOCK_KEY};

use std::sync::Arc;

use super::client::EtcdClient;
use super::counter::EtcdCounter;
use crate::counter::Counter;
use crate::RunError;

/// How clients lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The `concurrency.Mutex` recipe on `lock/`.
    Recipe,
    /// One key `lock` created if absent, released by `del lock` (retried when its reply
    /// is lost), or by a `Txn` guarded by its create revision.
    SingleKey {
        /// The release compares the key's create revision.
        guarded_release: bool,
    },
    /// etcd's server-side `Lock` RPC on lock `lock` (keys `lock/<lease>`).
    LockRpc,
}

/// The work a holder does with the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Read-modify-write of the harness's counter with no token (Jepsen's `lock-set`).
    Unfenced,
    /// The same, the key's create revision a token the counter checks.
    Fenced,
    /// Read the counter on etcd, write it in a `Txn` that puts only while the lock key
    /// has the holder's create revision (Jepsen's `lock-etcd-set`).
    TxnGuarded,
}

/// An etcd lock of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtcdLock {
    /// How clients lock.
    pub kind: Kind,
    /// The session lease's TTL (s; etcd's least here is 1 s).
    pub ttl_s: u64,
    /// What the holder does.
    pub work: Work,
}

impl EtcdLock {
    /// The lease the workload notes on each acquire: the session lease's TTL, which
    /// the keep-alives restart for as long as the client runs.
    pub fn lease(self) -> Lease {
        Lease::Fixed(Duration::from_secs(self.ttl_s))
    }

    /// The Jepsen etcd lock workload this lock and work are, if any: Jepsen's
    /// `lock-set` is the recipe guarding a read-modify-write it does not fence,
    /// `lock-etcd-set` the same with the write guarded by the lock key on etcd.
    pub fn jepsen_workload(self) -> Option<&'static str> {
        match (self.kind, self.work) {
            (Kind::Recipe, Work::Unfenced) => Some("lock-set"),
            (Kind::Recipe, Work::TxnGuarded) => Some("lock-etcd-set"),
            _ => None,
        }
    }
}

/// Client `index`'s `lock` over its session.
pub fn build(
    lock: EtcdLock,
    index: u32,
    client: &EtcdClient,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let session = EtcdSession::clone(&client.session);
    let owner = format!("c{index}");
    let ttl = Duration::from_secs(lock.ttl_s);
    Ok(match (lock.kind, lock.work) {
        (Kind::Recipe, Work::Unfenced) => {
            Box::new(RecipeLock::new(session, &owner, ttl).unfenced())
        }
        (Kind::Recipe, _) => Box::new(RecipeLock::new(session, &owner, ttl)),
        (Kind::SingleKey { guarded_release }, _) => {
            let single = SingleKeyLock::new(session, &owner, ttl);
            Box::new(if guarded_release {
                single.guarded()
            } else {
                single
            })
        }
        (Kind::LockRpc, _) => Box::new(LockRpcLock::new(session, LOCK_KEY, &owner, ttl)),
    })
}

/// Whether the work is on the cluster's own counter (the `Txn`-guarded write).
pub fn own_counter(lock: EtcdLock) -> bool {
    lock.work == Work::TxnGuarded
}

/// The counter on the cluster, for the `Txn`-guarded work.
pub fn counter(lock: EtcdLock, client: &EtcdClient) -> Option<Arc<dyn Counter>> {
    own_counter(lock).then(|| {
        Arc::new(EtcdCounter::new(
            EtcdSession::clone(&client.session),
            COUNTER_KEY,
        )) as Arc<dyn Counter>
    })
}
