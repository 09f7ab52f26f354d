//! One Redis client's connections: a node per lock server, in the scenario's order (the
//! one server; the master, followed through Sentinel; `n0` … `n4`). Redis clients send
//! nothing in the background and share the run's proxies, so a pause has nothing of
//! theirs to stop.

use locklab_implementations::redis::RedisNode;

use crate::family::Client;

/// One client's connected nodes.
#[derive(Clone, Debug)]
pub struct RedisClient {
    /// One connected node per lock server, in topology order.
    pub nodes: Vec<RedisNode>,
}

impl Client for RedisClient {}
