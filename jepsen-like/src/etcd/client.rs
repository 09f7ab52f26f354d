//! One etcd client's connection: its session, through proxies of its own in front of
//! every member (so a partition or a lost reply hits exactly this client), its lease
//! kept alive in the background.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::etcd::EtcdSession;

use crate::family::Client;
use crate::proxy::ClientProxies;

/// An etcd client's session and the proxies it reaches every member through.
#[derive(Clone, Debug)]
pub struct EtcdClient {
    /// Connected to the members only through `proxies`; records each request it sends as a
    /// `command` event of this client and keeps its lease alive.
    pub session: Arc<EtcdSession>,
    /// This client's proxies, one per member.
    pub proxies: ClientProxies,
}

impl Client for EtcdClient {
    /// The session's lease keep-alives wait the stall out, as a stopped process's do.
    fn stall(&self, d: Duration) {
        self.session.stall(d);
    }

    fn own_proxies(&self) -> Option<&ClientProxies> {
        Some(&self.proxies)
    }
}
