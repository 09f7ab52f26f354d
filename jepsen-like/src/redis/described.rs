//! A user's Redis protocol (or Redlock) as the run's lock: each client follows the protocol's steps
//! on its own connections ([`DescribedLock`]), with its own owner.

use std::sync::Arc;

use locklab_implementations::redis::{DescribedLock, Redlock};
use locklab_implementations::LockError;
use locklab_models::protocol::{RedisProtocol, RedlockProtocol};

use super::client::RedisClient;
use crate::custom::CustomLock;

/// The lock that runs `p` for every client of a Redis scenario.
pub fn lock(p: &RedisProtocol) -> CustomLock {
    let p = Arc::new(p.clone());
    CustomLock::of(&p.name.clone(), move |client: &RedisClient, key| {
        let first = client.nodes.first().ok_or(LockError::Unsupported {
            protocol: "a protocol file",
            what: "a scenario without a lock endpoint",
        })?;
        Ok(Box::new(DescribedLock::new(first, key, Arc::clone(&p))))
    })
}

/// The lock that runs a user's Redlock `p` over every node of a Redlock scenario.
pub fn redlock(p: &RedlockProtocol) -> CustomLock {
    let name = p.name().to_string();
    let p = Arc::new(p.clone());
    CustomLock::of(&name, move |client: &RedisClient, key| {
        Ok(Box::new(Redlock::described(
            &client.nodes,
            key,
            Arc::clone(&p),
        )?))
    })
}
