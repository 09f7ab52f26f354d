//! The SQL family's one face to the harness, per server kind: [`Sql<MariaDb>`] and
//! [`Sql<Postgres>`] (a type per server, because the URL a client needs and the way the
//! holder's session is found and killed differ per server).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::actions::SqlAction;
use super::client::SqlClient;
use super::cluster::{MariaDb, Postgres, Shape, SqlCluster, SqlKind};
use super::counter::SqlCounter;
use super::locks::{self, SqlLock};
use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::family::ActionOf;
use crate::family::{CommandLog, Family};
use crate::schedule::{Action, FamilyAction, Realises, Target};
use crate::RunError;
use locklab_models::registry::Fault;

/// SQL locks on one server of kind `K`.
pub struct Sql<K>(PhantomData<K>);

/// SQL locks on MariaDB.
pub type MariaDbSql = Sql<MariaDb>;

/// SQL locks on PostgreSQL.
pub type PostgresSql = Sql<Postgres>;

impl<K: SqlKind> Family for Sql<K> {
    type Servers = SqlCluster<K>;
    type Lock = SqlLock;
    type Client = SqlClient;

    const BACKEND: Backend = K::BACKEND;

    /// Whatever ends the holder's session — the server killing it, the server dying
    /// and coming back, the connection cut — is the model's killed session; the
    /// server's clock set ahead is its clock jump.
    fn realises(action: &Action<ActionOf<Self>>) -> Realises {
        match action {
            Action::Kill(_) | Action::Stop(_) | Action::Restart { .. } | Action::Partition(_) => {
                Realises::Fault(Fault::Kill)
            }
            Action::Clock { .. } => Realises::Fault(Fault::Jump),
            Action::HealPartition(_) | Action::Resume(_) => Realises::Heal,
            Action::Client { fault, .. } => Realises::Fault(*fault),
            Action::Family(a) => a.realises(),
            _ => Realises::Beyond,
        }
    }

    /// The holder's session killed, for a lock that lives in it; the reaper job
    /// stopped, where there is one; for a lock that
    /// reads a clock, on a server whose clock can be faked, that clock set further
    /// ahead each time (by one and a half leases, whole seconds).
    fn random_server_fault(
        shape: &Shape,
        lock: &SqlLock,
        ttl: Duration,
        kind: Fault,
        nth: u32,
        _pick: u64,
    ) -> Option<Action<ActionOf<Self>>> {
        match kind {
            Fault::Kill if lock.held_by_session() => {
                Some(Action::Family(SqlAction::KillHolderSession))
            }
            Fault::ReaperDies if shape.reaper_ms.is_some() => {
                Some(Action::Family(SqlAction::StopReaper))
            }
            Fault::Jump if K::FAKES_CLOCK && lock.timed() => Some(Action::Clock {
                target: Target::Primary,
                offset: format!("+{}", u64::from(nth + 1) * crate::random::jump_seconds(ttl)),
            }),
            _ => None,
        }
    }

    fn connect(
        servers: &SqlCluster<K>,
        addrs: &[String],
        commands: CommandLog,
    ) -> impl std::future::Future<Output = Result<SqlClient, RunError>> + Send {
        servers.connect_client(addrs, commands)
    }

    fn external_endpoints(
        _servers: &SqlCluster<K>,
        addrs: &[String],
        _client: &SqlClient,
    ) -> ExternalEndpoints {
        ExternalEndpoints {
            backend: Self::BACKEND,
            dsn: addrs.first().map(|a| K::url(a)),
            ..ExternalEndpoints::default()
        }
    }

    fn lease(lock: &SqlLock, ttl: Duration) -> Lease {
        lock.lease(ttl)
    }

    /// A client whose clock runs ahead is the model's skew.
    fn lock_realises(lock: &SqlLock) -> Vec<Fault> {
        match lock {
            SqlLock::LeaseClientTime { ahead_ms, .. } if *ahead_ms > 0 => vec![Fault::Skew],
            _ => Vec::new(),
        }
    }

    fn own_counter(lock: &SqlLock) -> bool {
        lock.work_in_tx()
    }

    fn counter(lock: &SqlLock, client: &SqlClient) -> Option<Arc<dyn Counter>> {
        lock.work_in_tx()
            .then(|| Arc::new(SqlCounter::new(client.session.clone())) as Arc<dyn Counter>)
    }

    fn build_lock(
        lock: &SqlLock,
        index: u32,
        client: &SqlClient,
        key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError> {
        locks::build(*lock, index, client, key)
    }
}
