//! The one place that lists the families: every plan `locklab run` knows, found by
//! catalog id, and run by its family's [`crate::cluster::Cluster`]. Adding a family
//! adds a variant here.

use crate::etcd::EtcdRunCluster;
use crate::plan::Plan;
use crate::redis::RedisCluster;
use crate::runner::{run_plan, Progress, RunOptions, RunReport};
use crate::sql::{MariaDbCluster, PostgresCluster};
use crate::zk::ZkRunCluster;
use crate::RunError;

/// A plan of any family.
#[derive(Clone, Debug)]
pub enum AnyPlan {
    /// Redis and Redlock.
    Redis(Plan<RedisCluster>),
    /// SQL locks on MariaDB.
    MariaDb(Plan<MariaDbCluster>),
    /// SQL locks on PostgreSQL.
    Postgres(Plan<PostgresCluster>),
    /// etcd locks on a 3-node cluster.
    Etcd(Plan<EtcdRunCluster>),
    /// ZooKeeper locks on a 3-server ensemble.
    Zk(Plan<ZkRunCluster>),
}

impl AnyPlan {
    /// The catalog id.
    pub fn id(&self) -> &'static str {
        match self {
            AnyPlan::Redis(p) => p.id,
            AnyPlan::MariaDb(p) => p.id,
            AnyPlan::Postgres(p) => p.id,
            AnyPlan::Etcd(p) => p.id,
            AnyPlan::Zk(p) => p.id,
        }
    }

    /// What the faults do.
    pub fn story(&self) -> &'static str {
        match self {
            AnyPlan::Redis(p) => p.story,
            AnyPlan::MariaDb(p) => p.story,
            AnyPlan::Postgres(p) => p.story,
            AnyPlan::Etcd(p) => p.story,
            AnyPlan::Zk(p) => p.story,
        }
    }
}

/// Every scenario `locklab run` can run.
pub fn plans() -> Vec<AnyPlan> {
    let redis = crate::redis::plans::plans().into_iter().map(AnyPlan::Redis);
    let mariadb = crate::sql::plans::mariadb()
        .into_iter()
        .map(AnyPlan::MariaDb);
    let postgres = crate::sql::plans::postgres()
        .into_iter()
        .map(AnyPlan::Postgres);
    let etcd = crate::etcd::plans::plans().into_iter().map(AnyPlan::Etcd);
    let zk = crate::zk::plans::plans().into_iter().map(AnyPlan::Zk);
    redis
        .chain(mariadb)
        .chain(postgres)
        .chain(etcd)
        .chain(zk)
        .collect()
}

/// The plan for `id`, or the ids that can run.
pub fn find(id: &str) -> Result<AnyPlan, Vec<&'static str>> {
    let all = plans();
    match all.iter().find(|p| p.id() == id) {
        Some(p) => Ok(p.clone()),
        None => Err(all.iter().map(AnyPlan::id).chain(inventory_ids()).collect()),
    }
}

/// The `inventory-*` rows that run on real servers (on `--backend`).
pub fn inventory_ids() -> impl Iterator<Item = &'static str> {
    crate::sql::inventory::Strategy::ALL
        .into_iter()
        .filter_map(crate::sql::inventory::Strategy::id)
}

/// Runs `options.id` on real servers. `progress` is called from this thread.
pub fn run(
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    // The inventory rows have buyers instead of a lock loop, and a server to choose.
    if let Some(strategy) = crate::sql::inventory::Strategy::from_id(&options.id) {
        if let Some(lock) = &options.lock {
            return Err(RunError::BadOption(format!(
                "{}: the inventory rows run buyers, not a lock; {} has nothing to do there",
                options.id,
                lock.name()
            )));
        }
        let backend = crate::sql::inventory::Backend::parse(options.backend.as_deref())?;
        return crate::sql::inventory::run::run(options, strategy, backend, progress);
    }
    if options.backend.is_some() {
        return Err(RunError::BadOption(format!(
            "--backend: {} names its own servers; only the inventory-* rows take one",
            options.id
        )));
    }
    let plan = find(&options.id).map_err(|known| RunError::UnknownId {
        id: options.id.clone(),
        known,
    })?;
    match plan {
        AnyPlan::Redis(plan) => {
            let plan = match options.replicas {
                None => plan,
                Some(r) => {
                    crate::redis::plans::with_replicas(plan, r).map_err(RunError::BadOption)?
                }
            };
            run_plan(plan, options, progress)
        }
        AnyPlan::MariaDb(plan) => run_plan(no_replicas(plan, options)?, options, progress),
        AnyPlan::Postgres(plan) => run_plan(no_replicas(plan, options)?, options, progress),
        AnyPlan::Etcd(plan) => run_plan(no_replicas(plan, options)?, options, progress),
        AnyPlan::Zk(plan) => run_plan(no_replicas(plan, options)?, options, progress),
    }
}

/// A plan of a family without replicas to choose, refusing `--replicas`.
fn no_replicas<T>(plan: T, options: &RunOptions) -> Result<T, RunError> {
    match options.replicas {
        None => Ok(plan),
        Some(_) => Err(RunError::BadOption(format!(
            "--replicas: {} has no replica count to choose",
            options.id
        ))),
    }
}
