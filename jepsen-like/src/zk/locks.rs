//! Which client lock a ZooKeeper scenario uses, and how one client builds it from its
//! session: the ephemeral-sequential recipe, its guards with or without the lock node's
//! `czxid` as fencing token.

use std::time::Duration;

use locklab_implementations::zk::RecipeLock;
use locklab_implementations::{DistributedLock, Lease};

use crate::custom::Endpoints;
use crate::RunError;

/// A ZooKeeper lock of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkLock {
    /// The session timeout the client asks for (ms; the servers allow 2–20 ticks).
    pub session_ms: u64,
    /// Whether the resource checks the node's czxid as a fencing token.
    pub fenced: bool,
}

impl ZkLock {
    /// The lease the workload notes on each acquire: the session timeout, which the
    /// client's pings restart for as long as it runs and reaches the ensemble.
    pub fn lease(self) -> Lease {
        Lease::Fixed(Duration::from_millis(self.session_ms))
    }
}

/// Client `client`'s lock over its session.
pub fn build(
    lock: ZkLock,
    client: u32,
    endpoints: &Endpoints,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let Endpoints::Zk(zk) = endpoints else {
        return Err(RunError::Internal(
            "a ZooKeeper lock needs a ZooKeeper session".into(),
        ));
    };
    let recipe = RecipeLock::new(zk.client.clone(), &format!("c{client}"));
    Ok(if lock.fenced {
        Box::new(recipe)
    } else {
        Box::new(recipe.unfenced())
    })
}
