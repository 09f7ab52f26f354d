//! What the harness needs from a family's servers, whatever the family: process control
//! by typed target, where the clients connect, whether the lock's record is on a node,
//! and the family's own faults. Each family implements [`Cluster`] in its folder
//! (`redis/cluster.rs`); the runner, the nemesis and the schedule know only this trait.

use locklab_models::registry::Backend;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use locklab_servers::Server;
use locklab_traces::format::Process;
use serde::Serialize;

use crate::custom::Endpoints;
use crate::external::ExternalEndpoints;
use crate::log::Log;
use crate::proxy::ProxyControl;
use crate::RunError;

/// What a fault acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The lock server with this index (in the family's order: Redlock's `n0` … `n4`).
    Node(usize),
    /// The lock server clients write to now (Redis: the master Sentinel names).
    Primary,
    /// Client `c`.
    Client(u32),
    /// Whichever client gets there first.
    AnyClient,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Node(i) => write!(f, "node {i}"),
            Target::Primary => f.write_str("primary"),
            Target::Client(c) => write!(f, "c{c}"),
            Target::AnyClient => f.write_str("any client"),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where one client's commands to the lock servers go: the run's history, as `command`
/// events stamped on the run clock as each exchange returns, so a history shows what
/// the servers were told and answered beside the operations built from it.
#[derive(Clone)]
pub struct CommandLog {
    /// The client.
    pub process: Process,
    /// The run's history.
    pub log: Arc<Log>,
}

/// A fault only one family can do (Redis: cutting replication with the ACL trick).
pub trait FamilyAction: Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Its name in the history (`cut-replication`).
    fn name(&self) -> &'static str;
    /// What it acts on.
    fn target(&self) -> Target;
    /// What the history names as its target, when [`FamilyAction::target`] cannot say
    /// (ZooKeeper's "the servers the nemesis killed"); `None`: the target's node name.
    fn target_name(&self) -> Option<&'static str> {
        None
    }
}

/// A family's running servers for one run. Dropping it kills every one of them.
///
/// Started on the thread that will own the servers for the whole run (each server dies
/// with the thread that started it).
pub trait Cluster: Send + Sized + 'static {
    /// The shapes this family's servers come in (Redis: single, Sentinel, Redlock).
    type Shape: Clone + fmt::Debug + Send + Sync;
    /// How the scenario's clients build their lock.
    type Lock: Clone + fmt::Debug + Send + Sync;
    /// The faults only this family knows.
    type Action: FamilyAction;

    /// The family's name, for the history header's `backend`.
    const BACKEND: Backend;

    /// Whether the lock servers end a lease at some unknown time after its TTL rather
    /// than at it (the history header's `late_expiry`).
    const LATE_EXPIRY: bool = false;

    /// Starts the servers; `fake_clock`: lock servers run under libfaketime.
    fn start(shape: &Self::Shape, fake_clock: bool) -> Result<Self, RunError>;

    /// The lock servers' names by index (`master`, `replica1`; `n0` …), for the history.
    fn node_names(&self) -> Vec<String>;

    /// Lock server `i`, for process control.
    fn node(&mut self, i: usize) -> Option<&mut dyn Server>;

    /// The node clients write to now, if the family has one (Redlock has none).
    fn primary(&self) -> Option<usize>;

    /// The nodes the clients connect to, in the order their locks expect; the harness
    /// puts a proxy in front of each.
    fn client_nodes(&self) -> Vec<usize>;

    /// What each of [`Cluster::client_nodes`] is to a client, for the history header
    /// and the run's drawing: by default the node's name.
    fn endpoint_names(&self) -> Vec<String> {
        let names = self.node_names();
        self.client_nodes()
            .iter()
            .map(|&i| names.get(i).cloned().unwrap_or_else(|| format!("node {i}")))
            .collect()
    }

    /// Whether node `i` holds the lock record `key` now.
    fn holds_key(&self, i: usize, key: &str) -> bool;

    /// Sets node `i`'s clock (`"+15"`: 15 s ahead), for families whose servers run
    /// under libfaketime.
    fn set_clock(&mut self, i: usize, offset: &str) -> Result<(), String>;

    /// Carries out a family fault.
    fn apply(&mut self, action: &Self::Action) -> Result<(), String>;

    /// Called every 100 ms during the workload: a family follows what its own
    /// machinery decides (Redis: Sentinel's failover, retargeting the proxy in front
    /// of the primary), recording it in the history.
    fn tick(&mut self, _proxies: &[(usize, ProxyControl)], _log: &Log) {}

    /// Connects to the proxied client endpoints, one client's worth, recording its
    /// commands in `commands` (`&self`: clients of a run may share what the family
    /// keeps for the run, such as one application's connection pool).
    fn connect(
        &self,
        addrs: &[String],
        commands: CommandLog,
    ) -> impl std::future::Future<Output = Result<Endpoints, RunError>> + Send;

    /// Where a lock client that is a program of its own connects (the external-client
    /// protocol's `init`), given the proxied addresses `addrs` and one client's
    /// harness connections: by default what those connections reach.
    fn external_endpoints(&self, addrs: &[String], endpoints: &Endpoints) -> ExternalEndpoints {
        ExternalEndpoints::reached_by(Self::BACKEND, addrs, endpoints)
    }

    /// The lease the scenario's lock asks for with every acquire, `ttl` long where the
    /// lock takes one.
    fn lease(_lock: &Self::Lock, ttl: std::time::Duration) -> locklab_implementations::Lease {
        locklab_implementations::Lease::Fixed(ttl)
    }

    /// Whether the scenario's critical sections work on a counter the lock's own
    /// servers hold ([`Cluster::resource`]): SQL's work inside the locking transaction
    /// (`SELECT … FOR UPDATE`), etcd's `Txn`-guarded write. Otherwise (every other lock)
    /// the harness's own Redis counter, which no fault reaches.
    fn own_resource(_lock: &Self::Lock) -> bool {
        false
    }

    /// The counter on the lock's own servers over one client's `endpoints`, for a lock
    /// whose [`Cluster::own_resource`] is true.
    fn resource(_lock: &Self::Lock, _endpoints: &Endpoints) -> Option<crate::resource::Resource> {
        None
    }

    /// The Jepsen workload the scenario's lock reproduces (etcd's `lock-set`), for
    /// the report.
    fn jepsen_workload(_lock: &Self::Lock) -> Option<&'static str> {
        None
    }

    /// Client `client`'s lock as the scenario has it.
    fn build_lock(
        lock: &Self::Lock,
        client: u32,
        endpoints: &Endpoints,
        key: &str,
    ) -> Result<Box<dyn locklab_implementations::DistributedLock>, RunError>;

    /// Free text for the history header.
    fn describe(&self) -> String;

    /// Tool versions for the header (`redis` → `7.0.15`).
    fn tools(&self) -> Vec<(String, String)>;

    /// Why this attempt says nothing and must be retried (Sentinel entered TILT; a
    /// failover never came although the nemesis killed the primary), after the
    /// workload.
    fn spoiled(&self, primary_killed: bool) -> Option<String>;

    /// Writes every server's log into `dir`.
    fn keep_logs(&self, dir: &Path);
}
