//! The etcd family's one face to the harness: a 3-member cluster
//! ([`EtcdRunCluster`]), a client's session through its own proxies ([`EtcdClient`]),
//! the scenario's lock, the `Txn`-guarded counter, its plans.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::actions::EtcdAction;
use super::client::EtcdClient;
use super::cluster::{EtcdRunCluster, Shape};
use super::locks::{self, EtcdLock};
use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::family::{ActionOf, Client, CommandLog, Family};
use crate::schedule::Action;
use crate::RunError;
use locklab_models::registry::Fault;

/// etcd locks on a real cluster.
#[derive(Clone, Copy, Debug)]
pub struct Etcd;

impl Family for Etcd {
    type Servers = EtcdRunCluster;
    type Lock = EtcdLock;
    type Client = EtcdClient;

    const BACKEND: Backend = Backend::Etcd;
    // The leader sweeps expired leases every 500 ms, and a new leader restarts each
    // lease's TTL: a lease outlives its TTL by an amount no client can know.
    const LATE_EXPIRY: bool = true;

    async fn connect(
        servers: &EtcdRunCluster,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<EtcdClient, RunError> {
        servers.connect_client(addrs, commands).await
    }

    /// The client's own proxies (so a partition or a lost reply hits exactly it).
    fn external_endpoints(
        _servers: &EtcdRunCluster,
        _addrs: &[String],
        client: &EtcdClient,
    ) -> ExternalEndpoints {
        ExternalEndpoints {
            backend: Self::BACKEND,
            etcd: client.own_proxies().map(|p| p.addrs()).unwrap_or_default(),
            ..ExternalEndpoints::default()
        }
    }

    /// A leader change: on hosts of their own, the leader cut off from the other two
    /// members (healed by [`Self::random_follow_up`]); otherwise the leader killed and
    /// started again with its data once another leads. Either way the new leader
    /// restarts every lease's TTL, the model's failover.
    fn random_server_fault(
        shape: &Shape,
        _lock: &EtcdLock,
        _ttl: Duration,
        kind: Fault,
        _nth: u32,
        _pick: u64,
    ) -> Option<Action<ActionOf<Self>>> {
        match (shape, kind) {
            (Shape::ThreeOnHosts, Fault::Failover) => {
                Some(Action::Family(EtcdAction::IsolateLeader))
            }
            (Shape::Three, Fault::Failover) => Some(Action::Family(EtcdAction::ChurnLeader)),
            _ => None,
        }
    }

    /// A cut leader's host rejoins a lease and a half later, as `etcd-leader-isolated`'s
    /// plan heals it: the leader change is over before the next fault.
    fn random_follow_up(
        _shape: &Shape,
        action: &Action<ActionOf<Self>>,
        ttl: Duration,
    ) -> Vec<(u64, Action<ActionOf<Self>>)> {
        let Action::Family(EtcdAction::IsolateLeader) = action else {
            return Vec::new();
        };
        vec![(
            crate::random::lease_and_a_half_ms(ttl),
            Action::Family(EtcdAction::HealIsolation),
        )]
    }

    fn jepsen_workload(lock: &EtcdLock) -> Option<&'static str> {
        lock.jepsen_workload()
    }

    fn lease(lock: &EtcdLock, _ttl: Duration) -> Lease {
        lock.lease()
    }

    fn own_counter(lock: &EtcdLock) -> bool {
        locks::own_counter(*lock)
    }

    fn counter(lock: &EtcdLock, client: &EtcdClient) -> Option<Arc<dyn Counter>> {
        locks::counter(*lock, client)
    }

    fn build_lock(
        lock: &EtcdLock,
        index: u32,
        client: &EtcdClient,
        _key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError> {
        locks::build(*lock, index, client)
    }
}
