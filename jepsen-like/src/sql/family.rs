//! The SQL family's one face to the harness, per server kind: [`Sql<MariaDb>`] and
//! [`Sql<Postgres>`] (a type per server, because the URL a client needs and the way the
//! holder's session is found and killed differ per server).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::client::SqlClient;
use super::cluster::{MariaDb, Postgres, SqlCluster, SqlKind};
use super::counter::SqlCounter;
use super::locks::{self, SqlLock};
use super::plans::Rows;
use crate::counter::Counter;
use crate::external::ExternalEndpoints;
use crate::family::{CommandLog, Family};
use crate::plan::Plan;
use crate::RunError;

/// SQL locks on one server of kind `K`.
pub struct Sql<K>(PhantomData<K>);

/// SQL locks on MariaDB.
pub type MariaDbSql = Sql<MariaDb>;

/// SQL locks on PostgreSQL.
pub type PostgresSql = Sql<Postgres>;

impl<K: SqlKind + Rows> Family for Sql<K> {
    type Servers = SqlCluster<K>;
    type Lock = SqlLock;
    type Client = SqlClient;

    const BACKEND: Backend = K::BACKEND;

    fn plans() -> Vec<Plan<Self>> {
        K::rows()
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
