//! The ZooKeeper family's one face to the harness: a 3-server ensemble
//! ([`ZkRunCluster`]), a client's session through its own proxies ([`ZkClient`]), the
//! scenario's lock, the `multi`-checked counter node, its plans.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::client::ZkClient;
use super::cluster::ZkRunCluster;
use super::locks::{self, ZkLock};
use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::family::{Client, CommandLog, Family};
use crate::RunError;

/// ZooKeeper locks on a real ensemble.
#[derive(Clone, Copy, Debug)]
pub struct Zk;

impl Family for Zk {
    type Servers = ZkRunCluster;
    type Lock = ZkLock;
    type Client = ZkClient;

    const BACKEND: Backend = Backend::Zookeeper;
    // The leader's session tracker expires sessions in whole ticks, after the timeout:
    // a session outlives its timeout by an amount no client can know.
    const LATE_EXPIRY: bool = true;

    async fn connect(
        servers: &ZkRunCluster,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<ZkClient, RunError> {
        servers.connect_client(addrs, commands).await
    }

    /// The client's own proxies (so a pause or a partition hits exactly it).
    fn external_endpoints(
        _servers: &ZkRunCluster,
        _addrs: &[String],
        client: &ZkClient,
    ) -> ExternalEndpoints {
        ExternalEndpoints {
            backend: Self::BACKEND,
            zookeeper: client.own_proxies().map(|p| p.addrs()).unwrap_or_default(),
            ..ExternalEndpoints::default()
        }
    }

    fn lease(lock: &ZkLock, _ttl: Duration) -> Lease {
        lock.lease()
    }

    fn own_counter(lock: &ZkLock) -> bool {
        locks::own_counter(*lock)
    }

    fn counter(lock: &ZkLock, client: &ZkClient) -> Option<Arc<dyn Counter>> {
        locks::counter(*lock, client)
    }

    fn build_lock(
        lock: &ZkLock,
        index: u32,
        client: &ZkClient,
        _key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError> {
        locks::build(*lock, index, client)
    }
}
