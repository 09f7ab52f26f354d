//! `--nemesis random[:kinds]`: Jepsen's generator instead of a row's hand-written plan.
//! The nemesis mixes the row's faults — client faults (pauses, crashes, partitions,
//! lost replies) and server faults (a server's clock jumping ahead, the holder's
//! session killed), those its family's model knows and its servers
//! can take — at random times drawn from the seed, the
//! history is judged as in every run, and the run is held against the model with the
//! same kinds of fault, so a random run can find what no plan scripted and still say
//! whether the model allows it. On a violation a shrinker replays ever smaller
//! schedules — the faults taken before the violation, then fewer, then shorter — and
//! keeps a smaller one only when a replay of it broke again: the smallest schedule it
//! reports is one it saw break, never one it guessed would.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use locklab_models::catalog::Scenario;
use locklab_models::registry::Fault;
use locklab_traces::check::{Report, Verdict};
use locklab_traces::format::{History, OpKind};
use locklab_traces::timeline::violation_span;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::schedule::{Action, FamilyAction, Realises, Step, Target, When};
use crate::RunError;

mod generate;
mod shrink;
pub(crate) use generate::{generate, Shape};
pub(crate) use shrink::{at_violation, shrink, violated_names, FaultNames};

/// The faults a random nemesis can mix into any family's run: each is suffered by the
/// client that next reaches the middle of its critical section, which the workload
/// realises the same way in every family.
pub const CLIENT_KINDS: [Fault; 4] = [Fault::Pause, Fault::Crash, Fault::Partition, Fault::Drop];

/// The server faults a random nemesis can mix where the row's servers take them
/// ([`crate::family::Family::random_server_fault`]): a server's clock set ahead (a
/// Redlock node's, MariaDB's), the holder's database session killed, the reaper job
/// stopped for good (where a row has one), a Sentinel failover (the master killed,
/// Sentinel promoting a replica: one per replica, after which the kind is spent), an
/// etcd or ZooKeeper leader change (the leader killed, or cut off from the others on
/// hosts of their own, and back before the next fault), a Sentinel split brain (the
/// first master and its pinned client cut off from the Sentinels and the replicas,
/// healed 8 s later: once, as the row's topology is drawn around them). Each
/// is one step whose every timing the row's model allows — or, a Redlock node's
/// restart, a kill and a start a lease and a half later (within every restart model:
/// empty, on its data, or delayed past the lease), which the shrinker keeps together.
pub const SERVER_KINDS: [Fault; 6] = [
    Fault::Jump,
    Fault::Kill,
    Fault::ReaperDies,
    Fault::Failover,
    Fault::Restart,
    Fault::Split,
];

/// Every kind a random nemesis may be asked for.
fn any_kind(f: Fault) -> bool {
    CLIENT_KINDS.contains(&f) || SERVER_KINDS.contains(&f)
}

/// Every kind a random nemesis may be asked for, as words.
fn all_names() -> String {
    format!("{}, {}", names(&CLIENT_KINDS), names(&SERVER_KINDS))
}

/// One and a half leases (ms): how far past a lease a random server fault reaches —
/// a clock jump, a killed Redlock node's restart, a cut leader's heal — so that every
/// model of the row allows it.
pub(crate) fn lease_and_a_half_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis())
        .unwrap_or(u64::MAX)
        .saturating_mul(3)
        / 2
}

/// A clock jump's length: one and a half leases in whole seconds (libfaketime's
/// offsets), at least one.
pub(crate) fn jump_seconds(ttl: Duration) -> u64 {
    lease_and_a_half_ms(ttl).div_ceil(1000).max(1)
}

/// A random run's length unless `--duration` says otherwise: long enough for a few
/// dozen faults.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// What a random run's faults do, for reports.
pub(crate) const STORY: &str = "random nemesis: the row's faults at random times drawn from the seed, one at a time; a client fault suffered by the next client to reach the middle of its critical section, a server fault at once";

/// Replays of a shrinker unless `--shrink-runs` says otherwise.
pub const DEFAULT_SHRINK_RUNS: u32 = 12;

/// Times each smaller schedule is replayed (each with its own seed) before the
/// shrinker gives up on it: one replay that does not break proves nothing.
const TRIES: u32 = 2;

/// Where a replayed schedule's first fault goes (ms after the workload starts): room
/// for a first grant, so the fault has a holder to hit.
pub(crate) const LEAD_MS: u64 = 500;

/// `--nemesis random[:kinds]` as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RandomNemesis {
    /// The kinds to mix; `None`: every fault the row's family's model knows and its
    /// servers can take.
    pub kinds: Option<Vec<Fault>>,
    /// Replays the shrinker may make after a violation; 0: no shrinking.
    pub shrink_runs: u32,
}

impl RandomNemesis {
    /// Parses `random` or `random:pause,crash`.
    ///
    /// # Errors
    /// Anything else, or an unknown fault name, with what is accepted.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (head, kinds) = match spec.split_once(':') {
            Some((h, k)) => (h, Some(k)),
            None => (spec, None),
        };
        if head != "random" {
            return Err(format!(
                "expected `random` or `random:KIND,…` (kinds: {}), got {spec:?}",
                all_names()
            ));
        }
        let kinds = kinds
            .map(|k| {
                k.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|name| {
                        name.parse::<Fault>()
                            .ok()
                            .filter(|f| any_kind(*f))
                            .ok_or_else(|| {
                                format!(
                                    "unknown kind {name:?}; a random nemesis mixes: {}",
                                    all_names()
                                )
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        if kinds.as_ref().is_some_and(Vec::is_empty) {
            return Err(format!(
                "`random:` names no kind; a random nemesis mixes: {}",
                all_names()
            ));
        }
        Ok(RandomNemesis {
            kinds,
            shrink_runs: DEFAULT_SHRINK_RUNS,
        })
    }

    /// The kinds this run mixes into `scenario`: those asked for (or all), each one its
    /// family's model knows, so the run can be held against that model, and — for a
    /// server fault — one the row's servers can take (`serves`).
    ///
    /// # Errors
    /// A kind the family's model has no word for or the servers cannot take, or a
    /// row with none.
    pub fn kinds_for(
        &self,
        scenario: &Scenario,
        serves: &dyn Fn(Fault) -> bool,
    ) -> Result<Vec<Fault>, RunError> {
        let modelled = |f: &Fault| scenario.family.faults().contains(f);
        let known: Vec<Fault> = CLIENT_KINDS
            .into_iter()
            .filter(modelled)
            .chain(
                SERVER_KINDS
                    .into_iter()
                    .filter(modelled)
                    .filter(|f| serves(*f)),
            )
            .collect();
        if known.is_empty() {
            return Err(RunError::BadOption(format!(
                "--nemesis random: {}'s model knows none of the faults a random nemesis mixes ({})",
                scenario.id,
                all_names()
            )));
        }
        match &self.kinds {
            None => Ok(known),
            Some(asked) => match asked.iter().find(|k| !known.contains(k)) {
                Some(k) if !modelled(k) => Err(RunError::BadOption(format!(
                    "--nemesis random:{k}: {}'s model has no {k} fault, so a run with it could not be held against the model; it knows: {}",
                    scenario.id,
                    names(&known)
                ))),
                Some(k) => Err(RunError::BadOption(format!(
                    "--nemesis random:{k}: {}'s servers cannot take a {k} here (a clock jump only where the server runs under libfaketime: Redlock's nodes, the ZooKeeper leader, MariaDB; a killed session only on SQL servers; a failover only behind Sentinel or as an etcd or ZooKeeper leader change); this row mixes: {}",
                    scenario.id,
                    names(&known)
                ))),
                None => Ok(asked.clone()),
            },
        }
    }
}

fn names(kinds: &[Fault]) -> String {
    kinds
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The most of one fault kind a model is checked with: the catalog's largest budget,
/// past which the state spaces stop fitting a CI run.
pub const MODEL_FAULT_CAP: usize = 8;

/// What a step is to the model: the fault it realises, if any (a family's
/// [`crate::family::Family::realises`]).
pub(crate) type Realised<'a, A> = dyn Fn(&Action<A>) -> Vec<Fault> + 'a;

/// How often each fault kind occurs in `steps`, in first-seen order.
fn fault_counts<A: FamilyAction>(
    steps: &[Step<A>],
    realised: &Realised<'_, A>,
) -> Vec<(Fault, usize)> {
    let mut counts: Vec<(Fault, usize)> = Vec::new();
    for fault in steps.iter().flat_map(|s| realised(&s.action)) {
        match counts.iter_mut().find(|(f, _)| *f == fault) {
            Some((_, n)) => *n += 1,
            None => counts.push((fault, 1)),
        }
    }
    counts
}

/// The model's fault budget for `steps`: each kind as often as the schedule has it
/// (at most [`MODEL_FAULT_CAP`]), `none` for an empty schedule.
pub(crate) fn model_faults<A: FamilyAction>(
    steps: &[Step<A>],
    realised: &Realised<'_, A>,
) -> String {
    let counts = fault_counts(steps, realised);
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(f, n)| format!("{f}={}", (*n).min(MODEL_FAULT_CAP)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Why the model's budget is smaller than the schedule, when it is: a model that
/// keeps a property with 8 pauses has not shown it keeps it with 12, so a run that
/// breaks it there is not proven less safe than the model.
pub(crate) fn model_cap<A: FamilyAction>(
    steps: &[Step<A>],
    realised: &Realised<'_, A>,
) -> Option<String> {
    let over: Vec<String> = fault_counts(steps, realised)
        .into_iter()
        .filter(|(_, n)| *n > MODEL_FAULT_CAP)
        .map(|(f, n)| format!("{n} {f}"))
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "the model was checked with at most {MODEL_FAULT_CAP} faults of each kind and the run drew {}: what the model keeps is kept only up to that bound",
            over.join(", ")
        )
    })
}

/// What a random nemesis did, in the run's report.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct NemesisReport {
    /// The kinds mixed.
    pub kinds: Vec<String>,
    /// Faults drawn.
    pub faults: usize,
    /// The model's fault budget the run was held against (`pause=8,crash=1`).
    pub model_faults: String,
    /// Faults drawn that no client took (the run ended first), counted.
    pub unfired: Vec<String>,
    /// What the history broke of the row's properties (by check name); empty: nothing
    /// the lock promises (other findings are the report's "also found").
    pub broken: Vec<String>,
    /// The faults active in the offending window (from the history), when something was
    /// violated.
    pub active: Vec<String>,
    /// The shrinker's result, when a violation was shrunk.
    pub shrunk: Option<Shrunk>,
}

/// The smallest schedule the shrinker saw break.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Shrunk {
    /// Whether any replay broke: `false` means the violation did not come back in the
    /// replays allowed, and `schedule` is the faults taken before it, not shrunk.
    pub reproduced: bool,
    /// The schedule, as in a history header.
    pub schedule: Vec<serde_json::Value>,
    /// The same as a plan a person can read, one fault per line.
    pub plan: Vec<String>,
    /// The replay's length (ms).
    pub duration_ms: u64,
    /// The seed of the replay that broke with it (`--seed` reproduces the clients'
    /// think times; the schedule is this one).
    pub seed: Option<u64>,
    /// What that replay violated.
    pub violated: Vec<String>,
    /// Faults before shrinking (those taken by the violation's end) and after.
    pub from_faults: usize,
    /// Replays made.
    pub replays: u32,
}

#[cfg(test)]
mod tests;
