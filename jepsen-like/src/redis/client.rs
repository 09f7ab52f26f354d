//! One Redis client's connections: a node per lock server, in the scenario's order (the
//! one server; the master, followed through Sentinel; `n0` … `n4`). Redis clients send
//! nothing in the background, so a pause has nothing of theirs to stop. A Redlock
//! client reaches its nodes through proxies of its own, so a partition can put it on
//! one side of a split of the nodes; the other shapes share the run's proxies.

use locklab_implementations::redis::RedisNode;

use crate::family::Client;
use crate::proxy::ClientProxies;

/// One client's connected nodes.
#[derive(Clone, Debug)]
pub struct RedisClient {
    /// One connected node per lock server, in topology order.
    pub nodes: Vec<RedisNode>,
    /// The client's own proxies in front of the run's (Redlock only).
    pub proxies: Option<ClientProxies>,
}

impl Client for RedisClient {
    fn own_proxies(&self) -> Option<&ClientProxies> {
        self.proxies.as_ref()
    }
}
