//! The one place that lists the families: every plan `locklab run` knows, found by
//! catalog id, and run by its family's [`crate::cluster::Cluster`]. Adding a family
//! adds a variant here.

use crate::plan::Plan;
use crate::redis::RedisCluster;
use crate::runner::{run_plan, Progress, RunOptions, RunReport};
use crate::RunError;

/// A plan of any family.
#[derive(Clone, Debug)]
pub enum AnyPlan {
    /// Redis and Redlock.
    Redis(Plan<RedisCluster>),
}

impl AnyPlan {
    /// The catalog id.
    pub fn id(&self) -> &'static str {
        match self {
            AnyPlan::Redis(p) => p.id,
        }
    }

    /// What the faults do.
    pub fn story(&self) -> &'static str {
        match self {
            AnyPlan::Redis(p) => p.story,
        }
    }
}

/// Every scenario `locklab run` can run.
pub fn plans() -> Vec<AnyPlan> {
    crate::redis::plans::plans()
        .into_iter()
        .map(AnyPlan::Redis)
        .collect()
}

/// The plan for `id`, or the ids that can run.
pub fn find(id: &str) -> Result<AnyPlan, Vec<&'static str>> {
    let all = plans();
    match all.iter().find(|p| p.id() == id) {
        Some(p) => Ok(p.clone()),
        None => Err(all.iter().map(AnyPlan::id).collect()),
    }
}

/// Runs `options.id` on real servers. `progress` is called from this thread.
pub fn run(
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
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
    }
}
