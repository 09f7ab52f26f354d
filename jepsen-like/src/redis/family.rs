//! The Redis family's one face to the harness: its servers ([`RedisCluster`]), a
//! client's connected nodes ([`RedisClient`]), the scenario's lock, its plans.

use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::client::RedisClient;
use super::cluster::{RedisCluster, MASTER_NAME};
use super::locks::{self, RedisLock};
use crate::external::ExternalEndpoints;
use crate::family::{CommandLog, Family};
use crate::plan::Plan;
use crate::RunError;

/// Redis and Redlock on real servers.
#[derive(Clone, Copy, Debug)]
pub struct Redis;

impl Family for Redis {
    type Servers = RedisCluster;
    type Lock = RedisLock;
    type Client = RedisClient;

    const BACKEND: Backend = Backend::Redis;

    fn plans() -> Vec<Plan<Self>> {
        super::plans::plans()
    }

    fn with_replicas(plan: Plan<Self>, replicas: usize) -> Result<Plan<Self>, String> {
        super::plans::with_replicas(plan, replicas)
    }

    async fn connect(
        _servers: &RedisCluster,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<RedisClient, RunError> {
        locks::connect(addrs, commands).await
    }

    /// The proxied servers, and the Sentinels themselves (not proxied: no fault cuts
    /// them), so a Sentinel-aware client can follow the failover on its own.
    fn external_endpoints(
        servers: &RedisCluster,
        addrs: &[String],
        _client: &RedisClient,
    ) -> ExternalEndpoints {
        let sentinels = servers.sentinel_addrs();
        ExternalEndpoints {
            backend: Self::BACKEND,
            redis: addrs.to_vec(),
            sentinel_master: (!sentinels.is_empty()).then(|| MASTER_NAME.to_string()),
            sentinels,
            ..ExternalEndpoints::default()
        }
    }

    fn lease(lock: &RedisLock, ttl: Duration) -> Lease {
        lock.lease(ttl)
    }

    fn build_lock(
        lock: &RedisLock,
        index: u32,
        client: &RedisClient,
        key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError> {
        locks::build(*lock, index, client, key)
    }
}
