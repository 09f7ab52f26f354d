//! One ZooKeeper client's connection: its session, through proxies of its own in front
//! of every server, so a pause can silence exactly this client — its pings stop
//! reaching the ensemble, as a stopped process's do, and the server expires its session
//! on its own clock. Dropping the last clone (the client died) cuts them for good.

use std::time::Duration;

use crate::family::Client;
use crate::proxy::ClientProxies;

/// A ZooKeeper client's session and the proxies it reaches every server through.
#[derive(Clone)]
pub struct ZkClient {
    /// This client's proxies, one per server (first: dropped first, so a client that
    /// dies is cut off before anything of its session could close it).
    pub proxies: ClientProxies,
    /// The session, every request of it recorded in the run's history.
    pub session: locklab_implementations::zk::ZkSession,
}

impl std::fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkClient")
            .field("session", &self.session)
            .field("proxies", &self.proxies.len())
            .finish()
    }
}

impl Client for ZkClient {
    /// The client's own proxies are cut for `d`, so its pings do not arrive.
    fn stall(&self, d: Duration) {
        self.proxies.cut_for(d);
    }

    fn own_proxies(&self) -> Option<&ClientProxies> {
        Some(&self.proxies)
    }
}
