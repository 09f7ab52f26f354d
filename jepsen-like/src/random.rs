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

/// The run's shape, for drawing a schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Run length (ms).
    pub(crate) duration_ms: u64,
    /// The lease (ms).
    pub(crate) ttl_ms: u64,
    /// Time inside a critical section (ms).
    pub(crate) work_ms: u64,
    /// Clients: a crash takes one for good, so at most all but one crash.
    pub(crate) clients: usize,
}

/// A server fault as the family makes it: `(kind, nth of its kind, pick)` → its steps,
/// each with its delay (ms) after the fault's time: one step, or a kill and the
/// restart that follows it.
pub(crate) type ServerFault<'a, A> = dyn Fn(Fault, u32, u64) -> Option<Vec<(u64, Action<A>)>> + 'a;

/// A random schedule of `kinds` over `shape`, one fault at a time, drawn from `seed`:
/// gaps of one to three rounds of lease and work (at least 0.4 s) between them, pauses
/// and partitions from half a lease to three leases — some shorter than the lease,
/// harmless to a lease lock, some far past it — each followed by a lease of the run;
/// a server fault made by `server`.
pub(crate) fn generate<A: FamilyAction>(
    kinds: &[Fault],
    seed: u64,
    shape: Shape,
    server: &ServerFault<'_, A>,
) -> Vec<Step<A>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x7261_6e64_6f6d_6e65);
    let round = (2 * (shape.ttl_ms + shape.work_ms)).max(400);
    let shortest = (shape.ttl_ms / 2).max(50);
    let longest = 3 * shape.ttl_ms.max(100);
    let mut crashes_left = shape.clients.saturating_sub(1);
    // The reaper stops for good: a second stop would find nothing to stop.
    let mut reaper_alive = true;
    let mut drawn: Vec<(Fault, u32)> = Vec::new();
    // Kinds the servers can take no more of (every replica promoted).
    let mut spent: Vec<Fault> = Vec::new();
    let mut steps = Vec::new();
    // The first fault falls where at least one fits.
    let first_room = shape
        .duration_ms
        .saturating_sub(LEAD_MS + shortest + shape.ttl_ms)
        .max(1);
    let mut at = LEAD_MS + rng.random_range(0..round.min(first_room));
    // Each fault leaves a lease after it to show what it did.
    while at + shortest + shape.ttl_ms < shape.duration_ms {
        let usable: Vec<Fault> = kinds
            .iter()
            .copied()
            .filter(|k| *k != Fault::Crash || crashes_left > 0)
            .filter(|k| *k != Fault::ReaperDies || reaper_alive)
            .filter(|k| !spent.contains(k))
            .collect();
        if usable.is_empty() {
            break;
        }
        let kind = usable[rng.random_range(0..usable.len())];
        let ms = match kind {
            Fault::Pause | Fault::Partition => {
                let room = shape.duration_ms - shape.ttl_ms - at;
                rng.random_range(shortest..=longest.min(room))
            }
            _ => 0,
        };
        if kind == Fault::Crash {
            crashes_left -= 1;
        }
        if kind == Fault::ReaperDies {
            reaper_alive = false;
        }
        let action = if CLIENT_KINDS.contains(&kind) {
            Action::client(kind, Target::AnyClient, ms)
        } else {
            let nth = match drawn.iter_mut().find(|(f, _)| *f == kind) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    drawn.push((kind, 0));
                    0
                }
            };
            let pick = rng.random::<u64>();
            let Some(actions) = server(kind, nth, pick).filter(|a| !a.is_empty()) else {
                // The servers take no more of it: draw again from the rest, at the
                // same time.
                spent.push(kind);
                continue;
            };
            // A restart follows its kill: the next fault comes after both.
            let last = actions.iter().map(|(d, _)| *d).max().unwrap_or(0);
            steps.extend(actions.into_iter().map(|(delay, action)| Step {
                when: When::At(at + delay),
                action,
            }));
            at += last + rng.random_range(round / 2..=round * 3 / 2);
            continue;
        };
        steps.push(Step {
            when: When::At(at),
            action,
        });
        at += ms + rng.random_range(round / 2..=round * 3 / 2);
    }
    steps
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

/// The history's names for a schedule's faults, taken from the schedule's own steps:
/// a client fault is recorded twice (the nemesis's request against "any client", then
/// again by the client that takes it), a server fault once, as the nemesis carries it out.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultNames {
    client: BTreeSet<String>,
    server: BTreeSet<String>,
}

impl FaultNames {
    /// The names `steps` are recorded under.
    pub(crate) fn of<A: FamilyAction>(steps: &[Step<A>]) -> Self {
        let mut names = FaultNames::default();
        for step in steps {
            let name = step.action.name().into_owned();
            match step.action {
                Action::Client { .. } => names.client.insert(name),
                _ => names.server.insert(name),
            };
        }
        names
    }
}

/// What a checked history says about where its violation was: the faults (of those
/// `names` knows) active in its span and how many had been taken by its end (a random
/// schedule's faults are taken in order, so that many of its steps led up to it).
pub(crate) fn at_violation(
    history: &History,
    report: &Report,
    names: &FaultNames,
) -> (Vec<String>, Option<usize>) {
    let Some((lo, hi)) = violation_span(history, report) else {
        return (Vec::new(), None);
    };
    let mut active = Vec::new();
    let mut taken = 0;
    for (_, e) in &history.events {
        if e.op != OpKind::Nemesis || e.time > hi {
            continue;
        }
        let Some(v) = &e.value_json() else { continue };
        let fault = v.get("fault").and_then(|f| f.as_str()).unwrap_or("");
        let target = v.get("target").and_then(|t| t.as_str()).unwrap_or("");
        // A step that could not be taken is recorded skipped, as "skipped client-pause
        // c1": it is still one of the schedule's steps passed.
        let skipped = fault == "skipped"
            && target
                .split_whitespace()
                .next()
                .is_some_and(|f| names.client.contains(f) || names.server.contains(f));
        let client_fault = names.client.contains(fault) && target != "any client";
        let server_fault = names.server.contains(fault);
        if client_fault || server_fault || skipped {
            taken += 1;
        }
        let ms = v.get("ms").and_then(|m| m.as_u64()).unwrap_or(0);
        let end = e.time.saturating_add(ms.saturating_mul(1_000_000));
        if (client_fault && end >= lo) || (server_fault && e.time >= lo) {
            let mut line = format!("{fault} {target} at {:.3} s", e.time as f64 / 1e9);
            if ms > 0 {
                let _ = write!(line, " for {ms} ms");
            }
            active.push(line);
        }
    }
    (active, Some(taken))
}

/// The properties `report` found violated, by name.
pub(crate) fn violated_names(report: &Report) -> Vec<String> {
    report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation)
        .map(|c| c.property.name().to_string())
        .collect()
}

/// One replay of a schedule: `(steps, duration_ms, try)` → what it violated (empty
/// when nothing), with the seed it ran under.
pub(crate) type Replay<'a, A> =
    dyn FnMut(&[Step<A>], u64, u32) -> Result<(Vec<String>, u64), RunError> + 'a;

/// Shrinks `taken` (the random schedule's steps taken by the violation's end, `all`
/// the whole schedule) to a smallest schedule that still violates one of `wanted`,
/// in at most `budget` replays: first the steps taken, rebased to start at once; then
/// fewer steps (halves, quarters, … one at a time); then each pause or partition
/// halved while it still breaks.
pub(crate) fn shrink<A: FamilyAction>(
    taken: Vec<Step<A>>,
    all: Vec<Step<A>>,
    wanted: &[String],
    ttl_ms: u64,
    budget: u32,
    replay: &mut Replay<'_, A>,
) -> Result<Shrunk, RunError> {
    let from_faults = taken.len();
    let mut s = Shrinker {
        wanted,
        ttl_ms,
        budget,
        replays: 0,
        replay,
        last: None,
    };
    let mut current = rebase(&taken);
    if !s.breaks(&current)? {
        let whole = rebase(&all);
        if whole == current || !s.breaks(&whole)? {
            return Ok(s.report(&current, false, from_faults));
        }
        current = whole;
    }
    // Fewer faults: whole faults are dropped, each with what follows it.
    let mut faults = units(&current);
    let mut chunk = faults.len().div_ceil(2);
    while faults.len() > 1 && chunk > 0 {
        let mut i = 0;
        while i < faults.len() && faults.len() > 1 {
            let mut fewer = faults.clone();
            fewer.drain(i..(i + chunk).min(faults.len()));
            let candidate = rebase(&fewer.concat());
            if !candidate.is_empty() && s.breaks(&candidate)? {
                faults = units(&candidate);
                current = candidate;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2).min(chunk - 1).max(1);
    }
    for i in 0..current.len() {
        loop {
            let Action::Client {
                fault,
                target,
                ms,
                overstay,
            } = current[i].action.clone()
            else {
                break;
            };
            if ms / 2 < 50 {
                break;
            }
            let mut candidate = current.clone();
            candidate[i].action = Action::Client {
                fault,
                target,
                ms: ms / 2,
                overstay,
            };
            if s.breaks(&candidate)? {
                current = candidate;
            } else {
                break;
            }
        }
    }
    Ok(s.report(&current, true, from_faults))
}

struct Shrinker<'r, 'a, A> {
    wanted: &'r [String],
    ttl_ms: u64,
    budget: u32,
    replays: u32,
    replay: &'r mut Replay<'a, A>,
    /// The last schedule that broke: what it violated and under which seed.
    last: Option<(Vec<String>, u64)>,
}

impl<A: FamilyAction> Shrinker<'_, '_, A> {
    /// Whether a replay of `steps` broke one of the wanted properties, within the
    /// budget; an exhausted budget says no.
    fn breaks(&mut self, steps: &[Step<A>]) -> Result<bool, RunError> {
        for t in 0..TRIES {
            if self.replays >= self.budget {
                return Ok(false);
            }
            self.replays += 1;
            let (violated, seed) = (self.replay)(steps, duration_ms(steps, self.ttl_ms), t)?;
            if violated.iter().any(|v| self.wanted.contains(v)) {
                self.last = Some((violated, seed));
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn report(&self, steps: &[Step<A>], reproduced: bool, from_faults: usize) -> Shrunk {
        let (violated, seed) = match (&self.last, reproduced) {
            (Some((v, s)), true) => (v.clone(), Some(*s)),
            _ => (Vec::new(), None),
        };
        Shrunk {
            reproduced,
            schedule: steps.iter().map(Step::to_json).collect(),
            plan: steps.iter().map(plan_line).collect(),
            duration_ms: duration_ms(steps, self.ttl_ms),
            seed,
            violated,
            from_faults,
            replays: self.replays,
        }
    }
}

/// `steps` moved so the first starts [`LEAD_MS`] after the workload, their gaps kept.
/// Whether a random schedule's step only follows the fault before it (a restart after
/// its kill, a heal after its cut, the proxy cut that goes with a split brain's): the
/// shrinker keeps or drops it with that fault, since alone it would restart a running
/// server, heal nothing, or cut clients off for good.
fn follows<A: FamilyAction>(action: &Action<A>) -> bool {
    match action {
        Action::Restart { .. }
        | Action::Partition(_)
        | Action::HealPartition(_)
        | Action::HealSplit
        | Action::Resume(_) => true,
        Action::Family(a) => matches!(a.realises(), Realises::Heal | Realises::Steer),
        _ => false,
    }
}

/// `steps` as faults, each with the steps that follow it ([`follows`]).
fn units<A: FamilyAction>(steps: &[Step<A>]) -> Vec<Vec<Step<A>>> {
    let mut out: Vec<Vec<Step<A>>> = Vec::new();
    for s in steps {
        match out.last_mut() {
            Some(unit) if follows(&s.action) => unit.push(s.clone()),
            _ => out.push(vec![s.clone()]),
        }
    }
    out
}

fn rebase<A: FamilyAction>(steps: &[Step<A>]) -> Vec<Step<A>> {
    let first = steps.iter().find_map(|s| match s.when {
        When::At(at) => Some(at),
        When::After { .. } => None,
    });
    let shift = first.map_or(0, |f| f.saturating_sub(LEAD_MS));
    steps
        .iter()
        .map(|s| Step {
            when: match s.when {
                When::At(at) => When::At(at - shift),
                w => w,
            },
            action: s.action.clone(),
        })
        .collect()
}

/// A replay's length: to the end of its last fault, then time for what it did to show
/// (a stalled holder's release lands after its pause).
fn duration_ms<A: FamilyAction>(steps: &[Step<A>], ttl_ms: u64) -> u64 {
    let end = steps
        .iter()
        .map(|s| {
            let at = match s.when {
                When::At(at) => at,
                When::After { delay_ms, .. } => delay_ms,
            };
            let ms = match s.action {
                Action::Client { ms, .. } => ms,
                _ => 0,
            };
            at + ms
        })
        .max()
        .unwrap_or(0);
    end + 1_000 + 2 * ttl_ms
}

/// One step as a plan line: `at 0.50 s: client-pause any client for 1200 ms`.
fn plan_line<A: FamilyAction>(s: &Step<A>) -> String {
    let when = match s.when {
        When::At(at) => format!("at {:.2} s", at as f64 / 1000.0),
        When::After {
            event, delay_ms, ..
        } => format!("{delay_ms} ms after {event}"),
    };
    let mut line = format!("{when}: {} {}", s.action.name(), s.action.target());
    match &s.action {
        Action::Client { ms, overstay, .. } if *ms > 0 => {
            let _ = write!(line, " for {ms} ms");
            if *overstay {
                line.push_str(", then steps on once another client has entered");
            }
        }
        Action::Clock { offset, .. } => {
            let _ = write!(line, " to {offset} s");
        }
        _ => {}
    }
    line
}

#[cfg(test)]
mod tests;
