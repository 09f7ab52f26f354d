//! Which client lock an etcd scenario uses, and how one client builds it from its
//! session: the `concurrency.Mutex` recipe, its guards with or without the create
//! revision as fencing token, and the protected write either the harness's counter or
//! a `Txn` on the cluster guarded by the lock key.

use std::time::Duration;

use locklab_implementations::etcd::{EtcdSession, RecipeLock};
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::etcd::spec::COUNTER_KEY;

use crate::custom::Endpoints;
use crate::resource::Resource;
use crate::RunError;

/// The work a recipe holder does with the lock.
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
}

/// Client `client`'s `lock` over its session.
pub fn build(
    lock: EtcdLock,
    client: u32,
    endpoints: &Endpoints,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let Endpoints::Etcd(session) = endpoints else {
        return Err(RunError::Internal(
            "an etcd lock needs an etcd session".into(),
        ));
    };
    let recipe = RecipeLock::new(
        EtcdSession::clone(session),
        &format!("c{client}"),
        Duration::from_secs(lock.ttl_s),
    );
    Ok(match lock.work {
        Work::Unfenced => Box::new(recipe.unfenced()),
        Work::Fenced | Work::TxnGuarded => Box::new(recipe),
    })
}

/// Whether the work is on the cluster's own counter (the `Txn`-guarded write).
pub fn own_resource(lock: EtcdLock) -> bool {
    lock.work == Work::TxnGuarded
}

/// The counter on the cluster, for the `Txn`-guarded work.
pub fn resource(lock: EtcdLock, endpoints: &Endpoints) -> Option<Resource> {
    match (lock.work, endpoints) {
        (Work::TxnGuarded, Endpoints::Etcd(session)) => {
            Some(Resource::etcd(EtcdSession::clone(session), COUNTER_KEY))
        }
        _ => None,
    }
}
