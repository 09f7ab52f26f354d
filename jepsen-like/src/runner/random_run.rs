//! A random nemesis's run: the row's plan with a random schedule instead of its own
//! faults, and the shrinker's replays of smaller schedules on fresh servers
//! ([`crate::random`] draws the schedules and decides what to replay).

use std::time::Duration;

use locklab_models::catalog::Scenario;

use super::{Once, Progress};
use crate::family::{ActionOf, Family};
use crate::plan::Plan;
use crate::random::{
    generate, model_faults, shrink, violated_names, NemesisReport, RandomNemesis, Shape, Shrunk,
    LEAD_MS, STORY,
};
use crate::schedule::{Action, Realises, Step};
use crate::RunError;
use locklab_models::registry::Fault;

/// The model faults a step of family `F` realises (a split brain's cut: the split and
/// the failover Sentinel then makes).
pub(crate) fn realised<F: Family>(action: &Action<ActionOf<F>>) -> Vec<Fault> {
    match F::realises(action) {
        Realises::Fault(f) => vec![f],
        Realises::Faults(fs) => fs.to_vec(),
        _ => Vec::new(),
    }
}

/// `plan` with its faults replaced by a random schedule of `nemesis`'s kinds drawn from
/// `seed` over `duration`, and the report's first lines.
pub(crate) fn plan<F: Family>(
    plan: Plan<F>,
    nemesis: &RandomNemesis,
    scenario: &Scenario,
    seed: u64,
    clients: usize,
    duration: Duration,
) -> Result<(Plan<F>, NemesisReport), RunError> {
    let ttl = Duration::from_millis(plan.ttl_ms);
    let server = |kind: Fault, nth: u32, pick: u64| {
        F::random_server_fault(&plan.shape, &plan.lock, ttl, kind, nth, pick).map(|a| {
            let next = F::random_follow_up(&plan.shape, &a, ttl);
            std::iter::once((0, a)).chain(next).collect::<Vec<_>>()
        })
    };
    let kinds = nemesis.kinds_for(scenario, &|kind| server(kind, 0, 0).is_some())?;
    let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let shape = Shape {
        duration_ms,
        ttl_ms: plan.ttl_ms,
        work_ms: plan.work_ms,
        clients,
    };
    let faults: Vec<Step<ActionOf<F>>> = generate(&kinds, seed, shape, &server);
    if faults.is_empty() {
        let need = LEAD_MS + (plan.ttl_ms / 2).max(50) + plan.ttl_ms + 100;
        return Err(RunError::BadOption(format!(
            "--duration {:.1} s is too short for a random nemesis on {}: a fault and a lease after it need at least {:.1} s",
            duration.as_secs_f64(),
            scenario.id,
            need as f64 / 1000.0
        )));
    }
    let report = NemesisReport {
        kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
        faults: faults.len(),
        model_faults: model_faults(&faults, &realised::<F>),
        ..NemesisReport::default()
    };
    // A clock fault needs servers started under libfaketime.
    let fake_clock = plan.fake_clock || kinds.contains(&Fault::Jump);
    let plan = Plan {
        faults,
        duration_ms,
        story: STORY,
        beyond_model: None,
        fake_clock,
        ..plan
    };
    Ok((plan, report))
}

/// Shrinks a random run's violation by replaying `once`'s plan with smaller schedules
/// (see [`shrink`]); `taken` client faults had been taken by the violation's end;
/// `wanted` is what it violated. A replay the machine spoiled counts as one that did not
/// break.
pub(crate) fn shrink_run<F: Family>(
    once: &Once<'_, F>,
    taken: Option<usize>,
    wanted: &[String],
    budget: u32,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Shrunk, RunError> {
    let all = once.plan.faults.clone();
    let taken_steps = all[..taken.unwrap_or(all.len()).min(all.len())].to_vec();
    let mut n = 0u32;
    let mut replay = |steps: &[Step<ActionOf<F>>], duration_ms: u64, _try: u32| {
        n += 1;
        progress(Progress::Shrinking {
            replay: n,
            budget,
            faults: steps.len(),
        });
        let plan = Plan {
            faults: steps.to_vec(),
            duration_ms,
            ..once.plan.clone()
        };
        let mut options = once.options.clone();
        options.html = false;
        options.keep = once
            .options
            .keep
            .as_ref()
            .map(|k| k.join(format!("shrink-{n}")));
        let replay_seed = seed.wrapping_add(100 + u64::from(n));
        let replay = Once {
            plan: &plan,
            options: &options,
            ..*once
        };
        match replay.run(replay_seed, Duration::from_millis(duration_ms), progress) {
            Ok((_, checked)) => Ok((violated_names(&checked.report), replay_seed)),
            Err(RunError::Unreliable(_)) => Ok((Vec::new(), replay_seed)),
            Err(e) => Err(e),
        }
    };
    shrink(
        taken_steps,
        all,
        wanted,
        once.plan.ttl_ms,
        budget,
        &mut replay,
    )
}
