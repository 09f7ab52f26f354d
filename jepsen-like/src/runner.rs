//! One `locklab run`: start the servers, record the workload under the nemesis, stop
//! everything, check the history read back from disk, and hold the verdict against the
//! model's. A run spoiled by the machine (Sentinel TILT, a failover that never came) is
//! retried and reported as such, never turned into a verdict.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use locklab_models::catalog;
use locklab_models::check::Limits;
use locklab_models::registry::{Property, ScenarioId, Verdict};
use locklab_traces::check::liveness::{self, Liveness};
use locklab_traces::check::overtaking::{self, Overtaking};

use crate::agreement::progress::{OrderAgreement, ProgressAgreement, StarvationAgreement};
use crate::placement::Net;
use locklab_traces::check::{check_history, Options, Report};
use locklab_traces::format::OpKind;
use locklab_traces::timeline::offending_window;
use serde::Serialize;

use crate::agreement::{compare, Agreement, Exercised};
use crate::custom::CustomLock;
use crate::external::ClientProblem;
use crate::family::Family;
use crate::plan::Plan;
use crate::random::{self, NemesisReport, RandomNemesis};
use crate::RunError;

mod attempt;
mod random_run;

use attempt::Attempt;

/// What the user asked for.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The catalog id.
    pub id: String,
    /// Clients (default: the plan's).
    pub clients: Option<usize>,
    /// Run length (default: the plan's).
    pub duration: Option<Duration>,
    /// Seed of the nemesis timing and the clients' think times.
    pub seed: u64,
    /// Keep the history and server logs in this directory.
    pub keep: Option<PathBuf>,
    /// Render the HTML report.
    pub html: bool,
    /// Attempts when the environment spoils a run, or a run of the scenario's own lock
    /// does not realise its plan.
    pub max_attempts: u32,
    /// Your own lock instead of the scenario's.
    pub lock: Option<CustomLock>,
    /// Replicas behind the master (failover scenarios); the model is checked at the
    /// same bound for the comparison.
    pub replicas: Option<usize>,
    /// Time and memory the history's checks may take; past them a check says unknown.
    pub check_budget: CheckBudget,
    /// The server an `inventory-*` row runs on (`mariadb`, `postgres`; default
    /// MariaDB); the lock rows name their own.
    pub backend: Option<String>,
    /// A user's protocol the run is held against instead of the row's: its model in
    /// the row's environment (the lock that runs it is [`RunOptions::lock`]).
    pub protocol: Option<locklab_models::protocol::Described>,
    /// `--nemesis random[:kinds]`: faults drawn at random instead of the row's plan.
    pub random: Option<RandomNemesis>,
    /// `--net`: each server on a host of its own (the default where namespaces can be
    /// made) or every server on loopback.
    pub net: Net,
}

/// The budget of the checks of one history (`--timeout`, `--memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckBudget {
    /// All checks of the history together.
    pub timeout: Duration,
    /// Each linearizability search, in bytes.
    pub memory: usize,
}

impl Default for CheckBudget {
    /// A minute and a gigabyte: far above what a run's history needs (seconds and tens
    /// of megabytes), far below what would take a CI machine down.
    fn default() -> Self {
        CheckBudget {
            timeout: Duration::from_secs(60),
            memory: 1 << 30,
        }
    }
}

impl RunOptions {
    /// Defaults for `id`.
    pub fn new(id: &str) -> Self {
        RunOptions {
            id: id.to_string(),
            clients: None,
            duration: None,
            seed: 1,
            keep: None,
            html: false,
            max_attempts: 3,
            lock: None,
            replicas: None,
            check_budget: CheckBudget::default(),
            backend: None,
            protocol: None,
            random: None,
            net: Net::Auto,
        }
    }
}

/// Where a run is, for a progress display.
#[derive(Clone, Debug)]
pub enum Progress {
    /// Starting the servers (attempt number).
    Starting(u32),
    /// The workload runs.
    Running {
        /// Since the workload started.
        elapsed: Duration,
        /// Planned length.
        total: Duration,
        /// Events recorded.
        events: u64,
    },
    /// Checking the history.
    Checking,
    /// The environment spoiled an attempt; retrying.
    Retrying(String),
    /// A random nemesis's shrinker replays a smaller schedule.
    Shrinking {
        /// This replay's number.
        replay: u32,
        /// Replays allowed.
        budget: u32,
        /// Faults in the schedule replayed.
        faults: usize,
    },
}

/// The result of a run.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunReport {
    /// The catalog id.
    pub id: String,
    /// The seed this attempt drew its fault timing and think times from: `--seed` plus the
    /// number of attempts discarded before it.
    pub seed: u64,
    /// What the faults do.
    pub story: String,
    /// Why the plan adds faults its row's model does not have, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_model: Option<String>,
    /// The servers.
    pub topology: String,
    /// The lock the clients used (the scenario's protocol, or a custom lock's name).
    pub lock: String,
    /// The Jepsen workload the run reproduces, when it is one (etcd's `lock-set`).
    pub jepsen_workload: Option<String>,
    /// The nemesis schedule that ran (as in the history header).
    pub schedule: Vec<serde_json::Value>,
    /// How many clients ran: `--clients`, else the plan's default (2 to 64).
    pub clients: usize,
    /// Attempts made (more than one when the environment spoiled a run or a run did
    /// not realise its plan).
    pub attempts: u32,
    /// Why earlier attempts were discarded.
    pub unreliable: Vec<String>,
    /// Events in the history.
    pub events: u64,
    /// The history file, when kept.
    pub history: Option<PathBuf>,
    /// Wall time of the whole run (ms).
    pub wall_ms: u64,
    /// The checkers' report.
    pub report: Report,
    /// The model's report at the run's bounds, which the run was held against.
    pub model: catalog::Report,
    /// Against the model.
    pub agreement: Agreement,
    /// The offending window as text, when something was violated.
    pub timeline: Option<Vec<String>>,
    /// What the history shows of the lock's liveness after a client crashed (a bounded
    /// observation, never a proof), when one did.
    pub liveness: Option<Liveness>,
    /// That observation beside the model's `eventually-free` verdict (agreement within
    /// the run's horizon), when there is one to compare.
    pub progress: Option<ProgressAgreement>,
    /// The order of the run's grants (where the service numbers its requests: ZooKeeper,
    /// etcd's recipe) beside the model's `fifo` verdict.
    pub order: Option<OrderAgreement>,
    /// The run's longest wait while others were granted (a bounded observation, never a
    /// proof), when a client waited through a grant of another.
    pub waited: Option<Overtaking>,
    /// That wait beside the model's `starvation-free` verdict (agreement within the
    /// run).
    pub starvation: Option<StarvationAgreement>,
    /// What external clients did wrong (garbage, unanswered or unasked-for replies, an
    /// exit), read back from the history.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_problems: Vec<ClientProblem>,
    /// What a random nemesis did (`--nemesis random`): its faults, those active where
    /// the history broke, and the smallest schedule the shrinker saw break.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<NemesisReport>,
    /// The recorded history, read back, when the HTML report was asked for: the run's
    /// page draws its lanes from it.
    #[serde(skip)]
    pub recorded: Option<locklab_traces::format::History>,
}

static RUN_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs one family's plan (`--replicas` already applied to it).
pub fn run_plan<F: Family>(
    plan: Plan<F>,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let scenario = catalog::row(plan.id);
    // What a `kill -9`ed run left of its hosts (namespaces, links) goes first, once per
    // process; its servers died with it (PR_SET_PDEATHSIG).
    static REAPED: std::sync::Once = std::sync::Once::new();
    REAPED.call_once(|| {
        locklab_servers::net::reap();
    });
    let (clients, duration) = sized(&plan, options)?;
    let (plan, mut nemesis) = match &options.random {
        Some(r) => {
            let (plan, report) =
                random_run::plan(plan, r, scenario, options.seed, clients, duration)?;
            (plan, Some(report))
        }
        None => (plan, None),
    };
    let overrides = catalog::Overrides {
        replicas: options.replicas,
        faults: nemesis.as_ref().map(|n| n.model_faults.clone()),
        ..catalog::Overrides::default()
    };
    let model = match &options.protocol {
        Some(d) => described_report(d, plan.id.name(), &overrides)?,
        None => model_report(plan.id, &overrides)?,
    };
    let expected = violated(&model)?;
    let started = Instant::now();
    let mut unreliable = Vec::new();
    for attempt in 1..=options.max_attempts.max(1) {
        progress(Progress::Starting(attempt));
        // Each attempt draws its own timing, so a retry is not the same doomed run.
        let seed = options.seed.wrapping_add(u64::from(attempt - 1));
        let once = Once {
            plan: &plan,
            scenario,
            options,
            clients,
            expected: &expected,
        };
        match once.run(seed, duration, progress) {
            Ok((mut done, checked)) => {
                if let Some(why) = unrealised(&checked.agreement, options) {
                    if attempt < options.max_attempts.max(1) {
                        progress(Progress::Retrying(why.clone()));
                        unreliable.push(format!("attempt {attempt}: {why}"));
                        continue;
                    }
                }
                if let Some(n) = nemesis.as_mut() {
                    n.unfired = std::mem::take(&mut done.unfired);
                    n.active.clone_from(&checked.at_violation.0);
                    // What the row promises and the history broke: a fenced lock's
                    // two holders (found, reported) are not what it promises.
                    let wanted: Vec<String> = checked
                        .agreement
                        .rows
                        .iter()
                        .filter(|r| r.observed == Some(locklab_traces::check::Verdict::Violation))
                        .flat_map(|r| r.from.iter().map(|f| f.to_string()))
                        .collect();
                    n.broken.clone_from(&wanted);
                    let budget = options.random.as_ref().map_or(0, |r| r.shrink_runs);
                    if !wanted.is_empty() && budget > 0 {
                        n.shrunk = Some(random_run::shrink_run(
                            &once,
                            checked.at_violation.1,
                            &wanted,
                            budget,
                            seed,
                            progress,
                        )?);
                    }
                }
                let mut report = checked.report;
                if options.keep.is_none() {
                    report.source = "the run's history (not kept: --out DIR keeps it)".into();
                    done.path.clear();
                }
                let ordered = report
                    .findings
                    .iter()
                    .find(|f| f.name == locklab_traces::backend::order::NAME);
                // The model's progress verdicts, judged once for every comparison that
                // needs them.
                let wanted =
                    ordered.is_some() || checked.liveness.is_some() || checked.waited.is_some();
                let verdicts = wanted.then(|| model_progress(plan.id, options)).flatten();
                let order = ordered
                    .map(|f| crate::agreement::progress::compare_order(verdicts.as_deref(), f));
                return Ok(RunReport {
                    id: plan.id.to_string(),
                    seed,
                    story: plan.story.to_string(),
                    beyond_model: plan.beyond_model.map(str::to_string),
                    topology: done.topology,
                    lock: options
                        .lock
                        .as_ref()
                        .map_or(plan.id.to_string(), |c| c.name().to_string()),
                    jepsen_workload: jepsen_workload(&plan, options).map(str::to_string),
                    schedule: done.schedule,
                    clients,
                    attempts: attempt,
                    unreliable,
                    events: done.events,
                    history: options.keep.as_ref().map(|_| done.path.clone()),
                    wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    report,
                    model,
                    agreement: checked.agreement,
                    timeline: checked.timeline,
                    progress: checked
                        .liveness
                        .as_ref()
                        .map(|l| crate::agreement::progress::compare(verdicts.as_deref(), l)),
                    order,
                    starvation: checked.waited.as_ref().map(|w| {
                        crate::agreement::progress::compare_starvation(verdicts.as_deref(), w)
                    }),
                    waited: checked.waited,
                    liveness: checked.liveness,
                    client_problems: checked.client_problems,
                    nemesis,
                    recorded: checked.history,
                });
            }
            Err(RunError::Unreliable(why)) => {
                progress(Progress::Retrying(why.clone()));
                unreliable.push(format!("attempt {attempt}: {why}"));
            }
            Err(e) => return Err(e),
        }
    }
    Err(RunError::Unreliable(unreliable.join("; ")))
}

/// One attempt of a plan, checked: what stays the same between a run's attempts and a
/// shrinker's replays.
pub(crate) struct Once<'a, F: Family> {
    pub(crate) plan: &'a Plan<F>,
    pub(crate) scenario: &'a catalog::Scenario,
    pub(crate) options: &'a RunOptions,
    pub(crate) clients: usize,
    pub(crate) expected: &'a [Property],
}

impl<F: Family> Once<'_, F> {
    /// Starts the servers, runs the workload under the plan's faults for `duration`,
    /// stops everything and checks the history.
    pub(crate) fn run(
        &self,
        seed: u64,
        duration: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(attempt::Attempted, Checked), RunError> {
        let options = self.options;
        let mut done = Attempt::start(self.plan, self.scenario.family, options, self.clients, seed)
            .and_then(|mut a| {
                let executed = a.execute(options, duration, seed, progress);
                a.stop(executed, options)
            })?;
        progress(Progress::Checking);
        // A random schedule's last faults may come after every client stopped: that
        // leaves nothing untested, unlike a plan's fault that never fired.
        let (unfired, model_bound) = match options.random {
            Some(_) => (
                Vec::new(),
                crate::random::model_cap(&self.plan.faults, &random_run::realised::<F>),
            ),
            None => (std::mem::take(&mut done.unfired), None),
        };
        let against = Against {
            scenario: self.scenario,
            expected: self.expected,
            unfired,
            model_bound,
            faults: crate::random::FaultNames::of(&self.plan.faults),
        };
        let checked = check(&done.path, options.html, options.check_budget, against)?;
        Ok((done, checked))
    }
}

/// Why an attempt did not realise its plan, when it did not and another attempt may:
/// no client entered its critical section, or a fault step's trigger never came. A
/// stall of the machine can do that to the scenario's own lock (a Redlock key whose
/// undo timed out stays for its whole lease, and a bare majority then grants nobody);
/// the answer of such an attempt is unknown, so the next seed is tried rather than
/// reporting it. A custom lock that tested nothing is reported at once: its own
/// behaviour is the likelier cause, and the report says what was not exercised.
fn unrealised(agreement: &Agreement, options: &RunOptions) -> Option<String> {
    let own_lock = options.lock.is_none() || options.protocol.is_some();
    let shortfalls = agreement.exercised.shortfalls();
    (own_lock && agreement.verdict == Verdict::Unknown && !shortfalls.is_empty())
        .then(|| format!("the plan was not realised: {}", shortfalls.join("; ")))
}

/// The Jepsen workload the plan's own lock reproduces (a custom lock is not it).
fn jepsen_workload<F: Family>(plan: &Plan<F>, options: &RunOptions) -> Option<&'static str> {
    options
        .lock
        .is_none()
        .then(|| F::jepsen_workload(&plan.lock))
        .flatten()
}

/// A recorded history checked and held against the model.
pub(crate) struct Checked {
    pub(crate) report: Report,
    pub(crate) agreement: Agreement,
    pub(crate) timeline: Option<Vec<String>>,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) waited: Option<Overtaking>,
    pub(crate) client_problems: Vec<ClientProblem>,
    /// The faults active where the history broke, and how many client faults had been
    /// taken by then (for a random nemesis).
    pub(crate) at_violation: (Vec<String>, Option<usize>),
    /// The history itself, kept for the run's diagram page (`--html`).
    pub(crate) history: Option<locklab_traces::format::History>,
}

/// Nobody granted for this many leases (and at least [`STUCK_FLOOR`]) after a crash
/// is what the liveness observation needs before it calls the lock stuck, for as long
/// as it was watched.
const STUCK_LEASES: u64 = 4;

/// The least watch for the liveness observation, also for locks with no lease.
const STUCK_FLOOR: Duration = Duration::from_secs(2);

/// How many clients run `plan` and for how long: the options' or the plan's (a random
/// nemesis's default length), each refused outside what a run can take.
fn sized<F: Family>(plan: &Plan<F>, options: &RunOptions) -> Result<(usize, Duration), RunError> {
    let clients = options.clients.unwrap_or(plan.clients);
    if !(2..=64).contains(&clients) {
        return Err(RunError::BadOption(format!(
            "--clients must be between 2 and 64, got {clients}"
        )));
    }
    let duration = options.duration.unwrap_or(match options.random {
        Some(_) => random::DEFAULT_DURATION,
        None => Duration::from_millis(plan.duration_ms),
    });
    if duration.is_zero() || duration > Duration::from_secs(600) {
        return Err(RunError::BadOption(format!(
            "--duration must be between 0 and 600 s, got {duration:?}"
        )));
    }
    Ok((clients, duration))
}

/// The model's report for `id` at the run's bounds (`overrides`: `--replicas`, a
/// random nemesis's fault budget): what the run is held against, carried in the run's
/// report so its page draws the model without checking it again.
pub fn model_report(
    id: ScenarioId,
    overrides: &catalog::Overrides,
) -> Result<catalog::Report, RunError> {
    catalog::check(&id, overrides, Limits::default(), &mut |_| {})
        .map_err(|e| RunError::BadOption(e.to_string()))
}

/// The model's progress verdicts at the run's bounds (`None` for a user's protocol
/// file, which has no progress model yet, or a row that judges none).
fn model_progress(
    id: ScenarioId,
    options: &RunOptions,
) -> Option<Vec<locklab_models::progress::Verdict>> {
    let overrides = catalog::Overrides {
        replicas: options.replicas,
        ..catalog::Overrides::default()
    };
    match options.protocol {
        Some(_) => None,
        None => catalog::progress(&id, &overrides, Limits::default())
            .ok()
            .flatten(),
    }
}

/// The model's report for a user's protocol `d` in row `id`'s environment, at the
/// run's bounds.
pub fn described_report(
    d: &locklab_models::protocol::Described,
    id: &str,
    overrides: &catalog::Overrides,
) -> Result<catalog::Report, RunError> {
    locklab_models::protocol::check(d, id, overrides, Limits::default())
        .map_err(|e| RunError::BadOption(e.to_string()))
}

/// The properties `model` says are violated; a model with no verdict leaves nothing to
/// compare with.
pub fn violated(model: &catalog::Report) -> Result<Vec<Property>, RunError> {
    match &model.verdict {
        catalog::Verdict::Holds => Ok(Vec::new()),
        catalog::Verdict::Violated(p) => Ok(p.clone()),
        catalog::Verdict::Unknown => Err(RunError::Unknown(format!(
            "the model of {} at {:?} gave no verdict within its limits",
            model.id, model.params
        ))),
    }
}

/// What a recorded history is held against: the row, the model's verdict and what the
/// run knows about its own faults.
pub(crate) struct Against<'a> {
    /// The catalog row.
    pub(crate) scenario: &'a catalog::Scenario,
    /// The properties the model says are violated.
    pub(crate) expected: &'a [Property],
    /// The fault steps that never fired (empty for a run without faults).
    pub(crate) unfired: Vec<String>,
    /// Why the model's verdict covers fewer faults than the run took.
    pub(crate) model_bound: Option<String>,
    /// The names the run's faults are recorded under.
    pub(crate) faults: crate::random::FaultNames,
}

/// Checks the history at `path` and compares it with the model's verdict.
pub(crate) fn check(
    path: &Path,
    html: bool,
    budget: CheckBudget,
    against: Against<'_>,
) -> Result<Checked, RunError> {
    // Read back from disk: the file, not memory, is what the run leaves behind.
    // The page draws the commands; the checks alone read them one at a time.
    let read = match html {
        true => locklab_traces::reader::read_path,
        false => locklab_traces::reader::read_path_lean,
    };
    let history = read(path)
        .map_err(|e| RunError::Internal(format!("the recorded history does not load: {e}")))?;
    let options = Options {
        timeout: Some(budget.timeout),
        memory: Some(budget.memory),
        html,
        ..Options::default()
    };
    let report = check_history(&history, &options)
        .map_err(|e| RunError::Internal(format!("the recorded history does not check: {e}")))?;
    let exercised = Exercised {
        sections: history
            .events
            .iter()
            .filter(|(_, e)| e.op == OpKind::Enter)
            .count() as u64,
        expects_sections: against.scenario.family.takes_a_lock(),
        unfired: against.unfired,
        model_bound: against.model_bound,
    };
    let agreement = compare(against.scenario, against.expected, &report, exercised);
    let timeline = offending_window(&history, &report);
    let liveness = liveness::after_crash(&history, STUCK_LEASES, STUCK_FLOOR);
    let at_violation = crate::random::at_violation(&history, &report, &against.faults);
    Ok(Checked {
        at_violation,
        report,
        agreement,
        timeline,
        liveness,
        waited: overtaking::longest_wait(&history),
        client_problems: crate::external::problems::in_history(&history),
        history: html.then_some(history),
    })
}

/// Where a run writes its history and its clients' files.
pub(crate) enum RunDir {
    /// `--keep`'s: the user's, left as it is.
    Kept(PathBuf),
    /// A fresh temporary one, removed when dropped (on every error path too) or, after
    /// a `kill -9`, by the next locklab process.
    Scratch(locklab_servers::scratch::ScratchDir),
}

impl RunDir {
    pub(crate) fn path(&self) -> &Path {
        match self {
            RunDir::Kept(p) => p,
            RunDir::Scratch(s) => s.path(),
        }
    }
}

/// The run's directory: `--keep`'s, or a fresh temporary one.
pub(crate) fn run_dir(keep: Option<&Path>) -> Result<RunDir, RunError> {
    match keep {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| RunError::BadOption(format!("--out {}: {e}", d.display())))?;
            Ok(RunDir::Kept(d.to_path_buf()))
        }
        None => locklab_servers::scratch::ScratchDir::create(&format!(
            "locklab-run-{}-{}",
            std::process::id(),
            RUN_SEQ.fetch_add(1, Ordering::Relaxed)
        ))
        .map(RunDir::Scratch)
        .map_err(|e| RunError::Environment(format!("a temp dir for the run: {e}"))),
    }
}
