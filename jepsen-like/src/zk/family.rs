//! The ZooKeeper family's one face to the harness: a 3-server ensemble
//! ([`ZkRunCluster`]), a client's session through its own proxies ([`ZkClient`]), the
//! scenario's lock, the `multi`-checked counter node, its plans.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::actions::ZkAction;
use super::client::ZkClient;
use super::cluster::{Shape, ZkRunCluster};
use super::locks::{self, ZkLock};
use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::family::{ActionOf, Client, CommandLog, Family};
use crate::schedule::{Action, Realises};
use crate::RunError;
use locklab_models::registry::Fault;

/// How long the ensemble takes to notice a lost leader and elect another (ms): its
/// sync limit (2.5 s here) and a vote.
const ELECTION_MS: u64 = 3_000;

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

    /// A leader killed or cut off is the model's leader change ([`ZkAction`]); the
    /// leader's clock set ahead is its leap of the clock that times sessions.
    fn realises(action: &Action<ActionOf<Self>>) -> Realises {
        match action {
            Action::Clock { .. } => Realises::Fault(Fault::Jump),
            other => crate::family::realises_generic(other),
        }
    }

    /// A leader change: on hosts of their own, the leader cut off from the other two
    /// servers (healed by [`Self::random_follow_up`]); otherwise the leader killed
    /// (and started again with its data). Either way the others elect a new leader
    /// that starts every session's timeout afresh, the model's failover.
    fn random_server_fault(
        shape: &Shape,
        _lock: &ZkLock,
        ttl: Duration,
        kind: Fault,
        nth: u32,
        _pick: u64,
    ) -> Option<Action<ActionOf<Self>>> {
        match (shape, kind) {
            (Shape::ThreeOnHosts { .. }, Fault::Failover) => {
                Some(Action::Family(ZkAction::IsolateLeader))
            }
            (Shape::Three, Fault::Failover) => Some(Action::Family(ZkAction::KillLeader)),
            // The leader's clock, one and a half sessions further ahead each time: a
            // bare leap, whose expiries race the clients' pings.
            (_, Fault::Jump) => Some(Action::Clock {
                target: crate::schedule::Target::Primary,
                offset: format!("+{}", u64::from(nth + 1) * crate::random::jump_seconds(ttl)),
            }),
            _ => None,
        }
    }

    /// The cut heals, or the killed leader starts again, once the others have elected
    /// (ZooKeeper notices a lost leader within its sync limit, 2.5 s here) and a
    /// session's length after: a leader change is over before the next fault, so
    /// two never stack into a lost quorum the model has no word for.
    fn random_follow_up(
        _shape: &Shape,
        action: &Action<ActionOf<Self>>,
        ttl: Duration,
    ) -> Vec<(u64, Action<ActionOf<Self>>)> {
        let end = match action {
            Action::Family(ZkAction::IsolateLeader) => ZkAction::HealIsolation,
            Action::Family(ZkAction::KillLeader) => ZkAction::RestartKilled,
            _ => return Vec::new(),
        };
        let session = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        vec![(ELECTION_MS.saturating_add(session), Action::Family(end))]
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
