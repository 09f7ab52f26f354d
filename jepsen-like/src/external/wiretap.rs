//! An external client's own traffic, heard: each address an external client is given
//! is a proxy of its own in front of the run's, which decodes what the client sends and
//! what comes back into the spec's commands and records them as the client's `command`
//! events — as locklab's own clients' commands are recorded. A check can then prove
//! from the client's traffic what it did (a `DEL` of another client's key), instead of
//! taking the client's word for it.
//!
//! Redis traffic (RESP) and ZooKeeper traffic (jute) are decoded; the SQL and etcd
//! addresses are passed through as they are. A Sentinel-aware client that asks the
//! Sentinels for the master reaches the master directly and is not heard. ZooKeeper's
//! addresses are the client's own proxies already (the ones a pause or partition
//! cuts); the hearing proxy sits in front of them.

use std::sync::Arc;

use locklab_implementations::recorder::event_recorder;
use locklab_implementations::redis::sniff::{ScriptBook, Sniffer};
#[cfg(feature = "zookeeper")]
use locklab_implementations::zk::sniff::Sniffer as ZkSniffer;
#[cfg(feature = "zookeeper")]
use locklab_implementations::zk::ZkWire;
use locklab_traces::format::Process;

use super::endpoints::ExternalEndpoints;
use crate::log::Log;
use crate::proxy::{ConnectionTap, Proxy, Wiretap};

/// The proxies hearing one client; dropping them stops hearing.
pub struct Heard {
    _proxies: Vec<Proxy>,
}

/// Redis connections of one client to one server, decoded.
struct RedisTap {
    client: u32,
    node: usize,
    log: Arc<Log>,
    scripts: ScriptBook,
}

struct RedisConnection(Sniffer);

impl ConnectionTap for RedisConnection {
    fn sent(&mut self, chunk: &[u8]) {
        self.0.sent(chunk);
    }

    fn received(&mut self, chunk: &[u8]) {
        self.0.received(chunk);
    }
}

impl Wiretap for RedisTap {
    fn connection(&self) -> Box<dyn ConnectionTap> {
        let log = Arc::clone(&self.log);
        let recorder = event_recorder(Process::Client(self.client), self.log.base(), move |e| {
            log.record_stamped(e)
        });
        Box::new(RedisConnection(Sniffer::new(
            recorder,
            self.node,
            self.scripts.clone(),
        )))
    }
}

/// ZooKeeper connections of one client to one server, decoded.
#[cfg(feature = "zookeeper")]
struct ZkTap {
    client: u32,
    node: usize,
    log: Arc<Log>,
}

#[cfg(feature = "zookeeper")]
struct ZkConnection(ZkSniffer);

#[cfg(feature = "zookeeper")]
impl ConnectionTap for ZkConnection {
    fn sent(&mut self, chunk: &[u8]) {
        self.0.sent(chunk);
    }

    fn received(&mut self, chunk: &[u8]) {
        self.0.received(chunk);
    }
}

#[cfg(feature = "zookeeper")]
impl Wiretap for ZkTap {
    fn connection(&self) -> Box<dyn ConnectionTap> {
        let log = Arc::clone(&self.log);
        let recorder =
            event_recorder::<ZkWire>(Process::Client(self.client), self.log.base(), move |e| {
                log.record_stamped(e)
            });
        Box::new(ZkConnection(ZkSniffer::new(recorder, self.node)))
    }
}

/// Puts a proxy that hears client `client` in front of each of `endpoints`' Redis
/// servers and each of its ZooKeeper servers, and points `endpoints` at them. A
/// server's index in its list is its `node` in the history. `scripts` is the run's,
/// shared by its clients. Must be called inside a tokio runtime.
pub async fn hear(
    endpoints: &mut ExternalEndpoints,
    client: u32,
    log: &Arc<Log>,
    scripts: &ScriptBook,
) -> std::io::Result<Heard> {
    let mut proxies = Vec::new();
    for (node, addr) in endpoints.redis.iter_mut().enumerate() {
        let tap = RedisTap {
            client,
            node,
            log: Arc::clone(log),
            scripts: scripts.clone(),
        };
        let proxy = Proxy::start_wiretapped(addr, Arc::new(tap)).await?;
        *addr = proxy.addr();
        proxies.push(proxy);
    }
    // Without the ZooKeeper family no scenario gives an external client ZooKeeper
    // servers, so there is nothing to hear.
    #[cfg(feature = "zookeeper")]
    for (node, addr) in endpoints.zookeeper.iter_mut().enumerate() {
        let tap = ZkTap {
            client,
            node,
            log: Arc::clone(log),
        };
        let proxy = Proxy::start_wiretapped(addr, Arc::new(tap)).await?;
        *addr = proxy.addr();
        proxies.push(proxy);
    }
    Ok(Heard { _proxies: proxies })
}
