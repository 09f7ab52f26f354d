//! Which client lock a ZooKeeper scenario uses, and how one client builds it from its
//! session: the ephemeral-sequential recipe written as the row's model [`Recipe`] says,
//! its guards with or without the lock node's `czxid` as fencing token, and the
//! protected write either the harness's counter or a counter node on the ensemble
//! written in a `multi` that checks the lock node.

use std::time::Duration;

use locklab_implementations::zk::RecipeLock;
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::zk::Recipe;

use std::sync::Arc;

use super::client::ZkClient;
use super::counter::ZkCounter;
use crate::counter::Counter;
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

/// Client `index`'s lock over its session.
pub fn build(
    lock: ZkLock,
    index: u32,
    client: &ZkClient,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let recipe =
        RecipeLock::new(client.session.clone(), &format!("c{index}")).with_recipe(lock.recipe);
    Ok(match lock.work {
        Work::Unfenced => Box::new(recipe.unfenced()),
        Work::Fenced | Work::MultiChecked => Box::new(recipe),
    })
}

/// Whether the work is on the ensemble's own counter node.
pub fn own_counter(lock: ZkLock) -> bool {
    lock.work == Work::MultiChecked
}

/// The counter node on the ensemble, for the `multi`-checked work.
pub fn counter(lock: ZkLock, client: &ZkClient) -> Option<Arc<dyn Counter>> {
    own_counter(lock)
        .then(|| Arc::new(ZkCounter::new(client.session.clone(), COUNTER)) as Arc<dyn Counter>)
}
