//! The one place that lists the families: a catalog row runs on its family's servers,
//! picked by one `match` on the row's [`ModelFamily`]. Adding a family adds an arm
//! here (the `match` does not compile without it) and its folder.

use locklab_models::catalog;
use locklab_models::registry::{Family as ModelFamily, ScenarioId};

#[cfg(feature = "etcd")]
use crate::etcd::Etcd;
use crate::plan::{Plan, Planned};
use crate::redis::Redis;
use crate::runner::{run_plan, Progress, RunOptions, RunReport};
#[cfg(feature = "sql")]
use crate::sql::{MariaDbSql, PostgresSql};
#[cfg(feature = "zookeeper")]
use crate::zk::Zk;
use crate::RunError;

/// A scenario that runs on real servers: its catalog id and what its faults do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runnable {
    /// The catalog id.
    pub id: &'static str,
    /// What the faults do, in one sentence.
    pub story: &'static str,
}

fn listed<F: Planned>() -> impl Iterator<Item = Runnable> {
    F::plans().into_iter().map(|p| Runnable {
        id: p.id.name(),
        story: p.story,
    })
}

/// Every scenario `locklab run` runs with a lock, family by family (the `inventory-*`
/// rows, which run buyers, are [`inventory_ids`]).
pub fn runnable() -> Vec<Runnable> {
    #[allow(unused_mut)] // Nothing is added when Redis is the only family built.
    let mut all: Vec<Runnable> = listed::<Redis>().collect();
    #[cfg(feature = "sql")]
    all.extend(listed::<MariaDbSql>().chain(listed::<PostgresSql>()));
    #[cfg(feature = "etcd")]
    all.extend(listed::<Etcd>());
    #[cfg(feature = "zookeeper")]
    all.extend(listed::<Zk>());
    all
}

/// The `inventory-*` rows that run on real servers (on `--backend`).
pub fn inventory_ids() -> impl Iterator<Item = &'static str> {
    #[cfg(feature = "sql")]
    let ids = crate::sql::inventory::Row::all().map(|r| r.id.name());
    // The inventory rows' buyers live with the SQL family.
    #[cfg(not(feature = "sql"))]
    let ids = std::iter::empty();
    ids
}

/// A family this build leaves out: which feature builds it.
#[allow(dead_code)]
fn not_built(family: &str, feature: &str) -> RunError {
    RunError::NotBuilt(format!(
        "{family} runs are not in this build: build locklab with `--features {feature}` \
         (or `--features run` for every family)"
    ))
}

/// `id` is no scenario that runs: which ones do.
fn unknown_id(id: &str) -> RunError {
    RunError::UnknownId {
        id: id.to_string(),
        known: runnable()
            .iter()
            .map(|r| r.id)
            .chain(inventory_ids())
            .collect(),
    }
}

/// The plan of `id` among family `F`'s.
fn plan<F: Planned>(id: ScenarioId) -> Option<Plan<F>> {
    F::plans().into_iter().find(|p| p.id == id)
}

/// Runs `options.id` on real servers. `progress` is called from this thread.
pub fn run(
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let unknown = || unknown_id(&options.id);
    // The user's id, read once: from here on the run carries the typed id.
    let id: ScenarioId = options.id.parse().map_err(|_| unknown())?;
    let family = catalog::row(id).family;
    if family != ModelFamily::Inventory && options.backend.is_some() {
        return Err(RunError::BadOption(format!(
            "--backend: {} names its own servers; only the inventory-* rows take one",
            options.id
        )));
    }
    match family {
        // The inventory rows have buyers instead of a lock loop, and a server to choose.
        #[cfg(not(feature = "sql"))]
        ModelFamily::Inventory => Err(not_built("inventory", "sql")),
        #[cfg(feature = "sql")]
        ModelFamily::Inventory => {
            let row = crate::sql::inventory::Row::of(id).ok_or_else(unknown)?;
            if let Some(lock) = &options.lock {
                return Err(RunError::BadOption(format!(
                    "{}: the inventory rows run buyers, not a lock; {} has nothing to do there",
                    options.id,
                    lock.name()
                )));
            }
            if options.random.is_some() {
                return Err(RunError::BadOption(format!(
                    "--nemesis: {} runs buyers without a lock's client faults; a random nemesis needs a lock row",
                    options.id
                )));
            }
            let backend = crate::sql::inventory::Backend::parse(options.backend.as_deref())?;
            crate::sql::inventory::run::run(options, row, backend, progress)
        }
        ModelFamily::Redis | ModelFamily::Redlock => run_family::<Redis>(id, options, progress),
        #[cfg(feature = "sql")]
        ModelFamily::Sql => match plan::<MariaDbSql>(id) {
            Some(_) => run_family::<MariaDbSql>(id, options, progress),
            None => run_family::<PostgresSql>(id, options, progress),
        },
        #[cfg(not(feature = "sql"))]
        ModelFamily::Sql => Err(not_built("SQL", "sql")),
        #[cfg(feature = "etcd")]
        ModelFamily::Etcd => run_family::<Etcd>(id, options, progress),
        #[cfg(not(feature = "etcd"))]
        ModelFamily::Etcd => Err(not_built("etcd", "etcd")),
        #[cfg(feature = "zookeeper")]
        ModelFamily::Zk => run_family::<Zk>(id, options, progress),
        #[cfg(not(feature = "zookeeper"))]
        ModelFamily::Zk => Err(not_built("ZooKeeper", "zookeeper")),
    }
}

/// Runs row `id` with family `F`'s plan for it, with `--replicas` applied.
fn run_family<F: Planned>(
    id: ScenarioId,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let plan = plan::<F>(id).ok_or_else(|| RunError::UnknownId {
        id: options.id.clone(),
        known: runnable()
            .iter()
            .map(|r| r.id)
            .chain(inventory_ids())
            .collect(),
    })?;
    // The row's faults are the plan's: a plan that injects another is a bug here.
    plan.check_faults().map_err(RunError::Internal)?;
    let plan = match options.replicas {
        None => plan,
        Some(r) => F::with_replicas(plan, r).map_err(RunError::BadOption)?,
    };
    run_plan(plan, options, progress)
}

/// The lock that runs a user's described protocol, by its family; an error when this
/// build leaves the family out.
pub fn protocol_lock(
    d: &locklab_models::protocol::Described,
) -> Result<crate::CustomLock, RunError> {
    match d {
        locklab_models::protocol::Described::Redis(p) => Ok(crate::redis::described::lock(p)),
        #[cfg(feature = "etcd")]
        locklab_models::protocol::Described::Etcd(p) => Ok(crate::etcd::described::lock(p)),
        #[cfg(not(feature = "etcd"))]
        locklab_models::protocol::Described::Etcd(_) => Err(not_built("etcd", "etcd")),
        locklab_models::protocol::Described::Redlock(p) => Ok(crate::redis::described::redlock(p)),
    }
}

// Every family's plans against the catalog: only where every family is built.
#[cfg(all(test, feature = "sql", feature = "etcd", feature = "zookeeper"))]
mod tests {
    use super::*;
    use locklab_models::catalog::Scenario;

    fn checked<F: Planned>() -> Vec<Result<(), String>> {
        F::plans().iter().map(Plan::check_faults).collect()
    }

    /// Every plan that runs is a catalog row of its own family, each row runs with at
    /// most one plan, and each plan injects exactly its row's faults.
    #[test]
    fn every_plan_is_a_row_of_its_family_injecting_the_rows_faults() {
        fn rows<F: Planned>(families: &[ModelFamily]) -> Vec<&'static str> {
            F::plans()
                .iter()
                .map(|p| {
                    let row: &Scenario = catalog::row(p.id);
                    assert!(
                        families.contains(&row.family),
                        "{} runs as {families:?} but is a {} row",
                        p.id,
                        row.family
                    );
                    p.id.name()
                })
                .collect()
        }
        let mut ids = rows::<Redis>(&[ModelFamily::Redis, ModelFamily::Redlock]);
        ids.extend(rows::<MariaDbSql>(&[ModelFamily::Sql]));
        ids.extend(rows::<PostgresSql>(&[ModelFamily::Sql]));
        ids.extend(rows::<Etcd>(&[ModelFamily::Etcd]));
        ids.extend(rows::<Zk>(&[ModelFamily::Zk]));
        let mut seen = ids.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), ids.len(), "a row with two plans: {ids:?}");
        let errors: Vec<String> = checked::<Redis>()
            .into_iter()
            .chain(checked::<MariaDbSql>())
            .chain(checked::<PostgresSql>())
            .chain(checked::<Etcd>())
            .chain(checked::<Zk>())
            .filter_map(Result::err)
            .collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
}
