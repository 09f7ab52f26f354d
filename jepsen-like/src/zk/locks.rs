//! Which client lock a ZooKeeper scenario uses, and how one client builds it from its
//! session: the ephemeral-sequential recipe written as the row's model [`Recipe`] says,
//! its guards with or without the lock node's `czxid` as fencing token, and the
//! protected write either the harness's counter or a counter node on the ensemble
//! written in a `multi` that checks the lock node.

use std::time::Duration;

use locklab_implementations::zk::RecipeLock;
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::zk::Recipe;

use crate::custom::Endpoints;
use crate::resource::{Resource, ZkCounter};
use crate::RunError;

/// The counter node of the `multi`-checked work.
pub const COUNTER: &str = "/counter";

/// The work a holder does with the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Read-modify-write of the harness's counter with no token.
    Unfenced,
    /// The same, the lock node's czxid a token the counter checks.
    Fenced,
    /// Read `/counter` on the ensemble, write it as `multi(check(lock node),
    /// setData(/counter))`.
    MultiChecked,
}

/// A ZooKeeper lock of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkLock {
    /// The session timeout the client asks for (ms; the servers allow 2–20 ticks).
    pub session_ms: u64,
    /// How the recipe is written (the model's words for it).
    pub recipe: Recipe,
    /// What the holder does.
    pub work: Work,
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
    let recipe =
        RecipeLock::new(zk.session.clone(), &format!("c{client}")).with_recipe(lock.recipe);
    Ok(match lock.work {
        Work::Unfenced => Box::new(recipe.unfenced()),
        Work::Fenced | Work::MultiChecked => Box::new(recipe),
    })
}

/// Whether the work is on the ensemble's own counter node.
pub fn own_resource(lock: ZkLock) -> bool {
    lock.work == Work::MultiChecked
}

/// The counter node on the ensemble, for the `multi`-checked work.
pub fn resource(lock: ZkLock, endpoints: &Endpoints) -> Option<Resource> {
    match (lock.work, endpoints) {
        (Work::MultiChecked, Endpoints::Zk(zk)) => {
            Some(Resource::Zk(ZkCounter::new(zk.session.clone(), COUNTER)))
        }
        _ => None,
    }
}
