//! A family as the harness sees it, one trait with one face: its servers
//! ([`Servers`], Jepsen's DB), its clients' connections ([`Client`], Jepsen's client),
//! how a client builds the scenario's lock, and the counter its work writes when the
//! lock's own servers keep it. The runner is generic over [`Family`]; the registry
//! picks the family of a catalog row with one `match`. A family is a folder
//! (`zk/`) and one arm there.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;
use locklab_traces::format::Process;

use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::log::Log;
use crate::proxy::ClientProxies;
use crate::schedule::{Action, FamilyAction, Realises};
use crate::servers::Servers;
use crate::RunError;

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

/// One client's connections to a run's lock servers, as the harness acts on them.
pub trait Client: Any + Clone + fmt::Debug + Send + Sync {
    /// Stops this client's background traffic for `d`, as a stop-the-world pause of
    /// its process would (an etcd session's keep-alives wait it out; a ZooKeeper
    /// client's own proxies are cut so its pings do not arrive). A client that sends
    /// nothing in the background has nothing to stop.
    fn stall(&self, _d: Duration) {}

    /// The client's own proxies, for the families whose clients have them (a
    /// partition or a lost reply then hits exactly this client).
    fn own_proxies(&self) -> Option<&ClientProxies> {
        None
    }

    /// Cuts this client (only) off every lock server for `d`, while it runs on.
    fn cut_off(&self, d: Duration) -> Result<(), String> {
        let proxies = self
            .own_proxies()
            .ok_or("this family's clients share the run's proxies")?;
        proxies.cut_for(d);
        Ok(())
    }

    /// Loses the reply to this client's next request to the lock servers (see
    /// [`crate::proxy::lose_next_reply`]).
    fn lose_next_reply(&self) -> Result<(), String> {
        let proxies = self
            .own_proxies()
            .ok_or("this family's clients share the run's proxies")?;
        proxies.lose_next_reply();
        Ok(())
    }
}

/// The shape of a family's servers.
pub type ShapeOf<F> = <<F as Family>::Servers as Servers>::Shape;

/// The faults only a family's servers know.
pub type ActionOf<F> = <<F as Family>::Servers as Servers>::Action;

/// A family of scenarios as it runs on real servers.
pub trait Family: Sized + Send + Sync + 'static {
    /// Its servers.
    type Servers: Servers;
    /// How the scenario's clients build their lock.
    type Lock: Clone + fmt::Debug + Send + Sync;
    /// One client's connections.
    type Client: Client;

    /// The history header's `backend`.
    const BACKEND: Backend;

    /// Whether the lock servers end a lease at some unknown time after its TTL rather
    /// than at it (the history header's `late_expiry`).
    const LATE_EXPIRY: bool = false;

    /// What a step of a plan is to the family's model: a client fault is the model's
    /// fault it names; a family fault says itself; a server fault (a kill, a restart,
    /// a clock) means what this family's model calls it, which a family with such
    /// faults says (Redis: killing the primary is a failover).
    fn realises(action: &Action<ActionOf<Self>>) -> Realises {
        realises_generic(action)
    }

    /// The model's faults the scenario's lock carries as knobs of its own rather than
    /// as steps of the schedule (a crash between two commands, a pause inside a
    /// release, a clock set ahead), which only the lock can place exactly.
    fn lock_realises(_lock: &Self::Lock) -> Vec<locklab_models::registry::Fault> {
        Vec::new()
    }

    /// Connects to the proxied client endpoints `addrs`, one client's worth, recording
    /// its commands in `commands` (the servers are passed: clients of a run may share
    /// what the family keeps for the run, such as one application's connection pool).
    fn connect(
        servers: &Self::Servers,
        addrs: &[String],
        commands: CommandLog,
    ) -> impl Future<Output = Result<Self::Client, RunError>> + Send;

    /// Where a lock client that is a program of its own connects (the external-client
    /// protocol's `init`), given the proxied addresses `addrs` and one client's
    /// connections.
    fn external_endpoints(
        servers: &Self::Servers,
        addrs: &[String],
        client: &Self::Client,
    ) -> ExternalEndpoints;

    /// The lease the scenario's lock asks for with every acquire, `ttl` long where the
    /// lock takes one.
    fn lease(_lock: &Self::Lock, ttl: Duration) -> Lease {
        Lease::Fixed(ttl)
    }

    /// Whether every critical section calls `lock()` again on the lock it holds (a
    /// nested method) before its write, waiting as the outer acquire did, and unlocks
    /// what it got: how a row that re-enters its lock runs.
    fn nested(_lock: &Self::Lock) -> bool {
        false
    }

    /// Whether the scenario's critical sections work on a counter the lock's own
    /// servers hold ([`Family::counter`]): SQL's work inside the locking transaction
    /// (`SELECT … FOR UPDATE`), etcd's `Txn`-guarded write. Otherwise (every other
    /// lock) the harness's own Redis counter, which no fault reaches.
    fn own_counter(_lock: &Self::Lock) -> bool {
        false
    }

    /// The counter on the lock's own servers over one client's connections, for a
    /// lock whose [`Family::own_counter`] is true.
    fn counter(_lock: &Self::Lock, _client: &Self::Client) -> Option<Arc<dyn Counter>> {
        None
    }

    /// A server fault of kind `kind` a random nemesis may draw for this row, as one
    /// step the model's `kind` stands for: a Redlock node restarted empty, a node's
    /// clock set ahead, the holder's database session killed. `nth` counts the faults
    /// of this kind drawn before (a clock jumps further each time); `pick` chooses
    /// among the nodes. `None`: the row's servers cannot take it (the default).
    fn random_server_fault(
        _shape: &ShapeOf<Self>,
        _lock: &Self::Lock,
        _ttl: Duration,
        _kind: locklab_models::registry::Fault,
        _nth: u32,
        _pick: u64,
    ) -> Option<Action<ActionOf<Self>>> {
        None
    }

    /// What follows random server fault `action` on servers of `shape`, each after how
    /// many ms: a killed Redlock node's restart, a cut's heal. Empty: nothing.
    fn random_follow_up(
        _shape: &ShapeOf<Self>,
        _action: &Action<ActionOf<Self>>,
        _ttl: Duration,
    ) -> Vec<(u64, Action<ActionOf<Self>>)> {
        Vec::new()
    }

    /// The Jepsen workload the scenario's lock reproduces (etcd's `lock-set`), for
    /// the report.
    fn jepsen_workload(_lock: &Self::Lock) -> Option<&'static str> {
        None
    }

    /// Client `index`'s lock as the scenario has it, on `key`.
    fn build_lock(
        lock: &Self::Lock,
        index: u32,
        client: &Self::Client,
        key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError>;
}

/// What a step means to every family's model unless the family says otherwise
/// ([`Family::realises`]): a client fault is the fault it names, a split a partition,
/// a resume or heal nothing of its own, a family fault what it says; a server fault is
/// beyond the model.
pub fn realises_generic<A: FamilyAction>(action: &Action<A>) -> Realises {
    match action {
        Action::Client { fault, .. } => Realises::Fault(*fault),
        Action::Split { .. } => Realises::Fault(locklab_models::registry::Fault::Partition),
        Action::Resume(_) | Action::HealPartition(_) | Action::HealSplit => Realises::Heal,
        Action::Family(a) => a.realises(),
        _ => Realises::Beyond,
    }
}
