//! One `locklab run`: start the servers, record the workload under the nemesis, stop
//! everything, check the history read back from disk, and hold the verdict against the
//! model's. A run spoiled by the machine (Sentinel TILT, a failover that never came) is
//! retried and reported as such, never turned into a verdict.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use locklab_implementations::{Lease, LockError};
use locklab_models::catalog;
use locklab_models::check::Limits;
use locklab_models::registry::Property;
use locklab_traces::check::{check_history, Options, Report};
use locklab_traces::format::{Header, OpKind, Process, ResourceSpec};
use locklab_traces::timeline::offending_window;
use serde::Serialize;

use locklab_servers::{RedisServer, Server};
use locklab_traces::check::liveness::{self, Liveness};

use crate::agreement::{compare, expected_at_defaults, Agreement, Exercised};
use crate::cluster::{Cluster, CommandLog};
use crate::custom::{ClientContext, CustomLock, Endpoints};
use crate::external::{wiretap, ClientProblem};
use crate::log::Log;
use crate::nemesis::{self, ClientFaults, Targets};
use crate::plan::Plan;
use crate::proxy::Proxy;
use crate::resource::Resource;
use crate::schedule::Schedule;
use crate::workload::{self, Shared};
use crate::RunError;
use locklab_implementations::redis::sniff::ScriptBook;

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
    /// Attempts when the environment spoils a run.
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
}

/// The result of a run.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// The catalog id.
    pub id: String,
    /// The seed.
    pub seed: u64,
    /// What the faults do.
    pub story: String,
    /// The servers.
    pub topology: String,
    /// The lock the clients used (the scenario's protocol, or a custom lock's name).
    pub lock: String,
    /// The Jepsen workload the run reproduces, when it is one (etcd's `lock-set`).
    pub jepsen_workload: Option<String>,
    /// The nemesis schedule that ran (as in the history header).
    pub schedule: Vec<serde_json::Value>,
    /// Clients.
    pub clients: usize,
    /// Attempts made (more than one when the environment spoiled a run).
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
    /// Against the model.
    pub agreement: Agreement,
    /// The offending window as text, when something was violated.
    pub timeline: Option<Vec<String>>,
    /// What the history shows of the lock's liveness after a client crashed (a bounded
    /// observation, never a proof), when one did.
    pub liveness: Option<Liveness>,
    /// What external clients did wrong (garbage, unanswered or unasked-for replies, an
    /// exit), read back from the history.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_problems: Vec<ClientProblem>,
    /// The recorded history, read back, when the HTML report was asked for: the run's
    /// page draws its lanes from it.
    #[serde(skip)]
    pub recorded: Option<locklab_traces::format::History>,
}

static RUN_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs one family's plan (`--replicas` already applied to it).
pub fn run_plan<C: Cluster>(
    plan: Plan<C>,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let scenario = catalog::find(plan.id).map_err(|e| RunError::Internal(e.to_string()))?;
    let expected = match options.replicas {
        None => expected_at_defaults(&scenario),
        Some(r) => model_verdict(plan.id, r)?,
    };
    let clients = options.clients.unwrap_or(plan.clients);
    if !(2..=64).contains(&clients) {
        return Err(RunError::BadOption(format!(
            "--clients must be between 2 and 64, got {clients}"
        )));
    }
    let duration = options
        .duration
        .unwrap_or(Duration::from_millis(plan.duration_ms));
    if duration.is_zero() || duration > Duration::from_secs(600) {
        return Err(RunError::BadOption(format!(
            "--duration must be between 0 and 600 s, got {duration:?}"
        )));
    }
    let started = Instant::now();
    let mut unreliable = Vec::new();
    for attempt in 1..=options.max_attempts.max(1) {
        progress(Progress::Starting(attempt));
        // Each attempt draws its own timing, so a retry is not the same doomed run.
        let seed = options.seed.wrapping_add(u64::from(attempt - 1));
        match attempt_once(&plan, options, clients, duration, seed, progress) {
            Ok(mut done) => {
                progress(Progress::Checking);
                let checked = check(
                    &done.path,
                    options.html,
                    options.check_budget,
                    &scenario,
                    &expected,
                    std::mem::take(&mut done.unfired),
                )?;
                let mut report = checked.report;
                if options.keep.is_none() {
                    report.source = "the run's history (not kept: --keep DIR keeps it)".into();
                    let _ = std::fs::remove_dir_all(&done.dir);
                    done.path.clear();
                }
                return Ok(RunReport {
                    id: plan.id.to_string(),
                    seed,
                    story: plan.story.to_string(),
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
                    agreement: checked.agreement,
                    timeline: checked.timeline,
                    liveness: checked.liveness,
                    client_problems: checked.client_problems,
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

/// The Jepsen workload the plan's own lock reproduces (a custom lock is not it).
fn jepsen_workload<C: Cluster>(plan: &Plan<C>, options: &RunOptions) -> Option<&'static str> {
    options
        .lock
        .is_none()
        .then(|| C::jepsen_workload(&plan.lock))
        .flatten()
}

struct Attempted {
    dir: PathBuf,
    path: PathBuf,
    topology: String,
    schedule: Vec<serde_json::Value>,
    events: u64,
    /// The plan's fault steps that never fired, each with why.
    unfired: Vec<String>,
}

/// A recorded history checked and held against the model.
pub(crate) struct Checked {
    pub(crate) report: Report,
    pub(crate) agreement: Agreement,
    pub(crate) timeline: Option<Vec<String>>,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) client_problems: Vec<ClientProblem>,
    /// The history itself, kept for the run's diagram page (`--html`).
    pub(crate) history: Option<locklab_traces::format::History>,
}

/// Nobody granted for this many leases (and at least [`STUCK_FLOOR`]) after a crash
/// is what the liveness observation needs before it calls the lock stuck, for as long
/// as it was watched.
const STUCK_LEASES: u64 = 4;

/// The least watch for the liveness observation, also for locks with no lease.
const STUCK_FLOOR: Duration = Duration::from_secs(2);

/// The properties the model violates for `id` with `replicas` replicas.
fn model_verdict(id: &str, replicas: usize) -> Result<Vec<Property>, RunError> {
    let overrides = catalog::Overrides {
        replicas: Some(replicas),
        ..catalog::Overrides::default()
    };
    let report = catalog::check(id, &overrides, Limits::default(), &mut |_| {})
        .map_err(|e| RunError::BadOption(e.to_string()))?;
    match report.verdict {
        catalog::Verdict::Holds => Ok(Vec::new()),
        catalog::Verdict::Violated(p) => Ok(p),
        catalog::Verdict::Unknown => Err(RunError::Unknown(format!(
            "the model of {id} with {replicas} replicas gave no verdict within its limits"
        ))),
    }
}

/// Checks the history at `path` and compares it with the model's `expected` verdict;
/// `unfired` are the fault steps that never fired (empty for a run without faults).
pub(crate) fn check(
    path: &Path,
    html: bool,
    budget: CheckBudget,
    scenario: &catalog::Scenario,
    expected: &[Property],
    unfired: Vec<String>,
) -> Result<Checked, RunError> {
    // Read back from disk: the file, not memory, is what the run leaves behind.
    let history = locklab_traces::reader::read_path(path)
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
        expects_sections: scenario.family != locklab_models::registry::Family::Inventory,
        unfired,
    };
    let agreement = compare(scenario, expected, &report, exercised);
    let timeline = offending_window(&history, &report);
    let liveness = liveness::after_crash(&history, STUCK_LEASES, STUCK_FLOOR);
    Ok(Checked {
        report,
        agreement,
        timeline,
        liveness,
        client_problems: crate::external::problems::in_history(&history),
        history: html.then_some(history),
    })
}

/// The run's directory: `--keep`'s, or a fresh temporary one.
pub(crate) fn run_dir(keep: Option<&Path>) -> Result<PathBuf, RunError> {
    let dir = match keep {
        Some(d) => d.to_path_buf(),
        None => std::env::temp_dir().join(format!(
            "locklab-run-{}-{}",
            std::process::id(),
            RUN_SEQ.fetch_add(1, Ordering::Relaxed)
        )),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| RunError::BadOption(format!("--keep {}: {e}", dir.display())))?;
    Ok(dir)
}

fn attempt_once<C: Cluster>(
    plan: &Plan<C>,
    options: &RunOptions,
    clients: usize,
    duration: Duration,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Attempted, RunError> {
    let schedule = Schedule::jittered(&plan.faults, 20, seed);
    // Servers start on this thread, which outlives the run (they die with the thread
    // that started them). The resource is the harness's own Redis counter, which no
    // fault reaches, unless the scenario's work commits with the lock in the lock's
    // own database.
    let mut cluster = C::start(&plan.shape, plan.fake_clock)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RunError::Environment(format!("tokio runtime: {e}")))?;
    let mut proxies = Vec::new();
    for i in cluster.client_nodes() {
        let addr = cluster
            .node(i)
            .map(|s| s.addr())
            .ok_or_else(|| RunError::Internal(format!("no node {i}")))?;
        let proxy = runtime
            .block_on(Proxy::start(&addr))
            .map_err(|e| RunError::Environment(format!("proxy for {addr}: {e}")))?;
        proxies.push((i, proxy));
    }

    // A custom lock brings no transaction or guarded write of the scenario's to work in.
    let in_db = options.lock.is_none() && C::own_resource(&plan.lock);
    let resource_server = if in_db {
        None
    } else {
        Some(RedisServer::start().map_err(|e| RunError::Environment(e.to_string()))?)
    };

    let dir = run_dir(options.keep.as_deref())?;
    let path = dir.join("history.jsonl");
    let mut header = Header::new(plan.id, C::BACKEND);
    header.topology = match &resource_server {
        Some(s) => format!("{}; resource {}", cluster.describe(), s.addr()),
        None => format!(
            "{}; resource: a counter on the lock's own servers, written with the lock",
            cluster.describe()
        ),
    };
    header.endpoints = cluster.endpoint_names();
    header.nemesis = schedule.to_header();
    header.seed = Some(seed);
    for (tool, version) in cluster.tools() {
        header.tools.insert(tool, version.into());
    }
    header.resource = Some(ResourceSpec::Counter { initial: 0 });
    header.late_expiry = C::LATE_EXPIRY;
    if let Some(custom) = &options.lock {
        header.tools.insert("lock".into(), custom.name().into());
    }
    if let Some(w) = jepsen_workload(plan, options) {
        header.tools.insert("jepsen-workload".into(), w.into());
    }
    let log = Arc::new(
        Log::create(&path, &header)
            .map_err(|e| RunError::Environment(format!("{}: {e}", path.display())))?,
    );

    let key = "locklab:lock";
    let addrs: Vec<String> = proxies.iter().map(|(_, p)| p.addr()).collect();
    let resource_addr = resource_server.as_ref().map(|s| s.addr());
    let resource_for = |endpoints: Option<&Endpoints>| -> Result<Resource, RunError> {
        match &resource_addr {
            Some(addr) => runtime
                .block_on(Resource::connect(addr, "locklab:counter"))
                .map_err(|e| RunError::Environment(format!("resource server: {e}"))),
            None => endpoints
                .and_then(|e| C::resource(&plan.lock, e))
                .ok_or_else(|| {
                    RunError::Internal(format!("{} has no counter of its own to work on", plan.id))
                }),
        }
    };
    let mut handles = Vec::new();
    // An external client's traffic is heard by proxies of its own; the scripts it loads
    // are known to every client's (one may run by hash what another loaded).
    let scripts = ScriptBook::default();
    let mut hearing = Vec::new();
    for client in 0..clients {
        let client = u32::try_from(client).unwrap_or(u32::MAX);
        // Every command the client sends to a lock server goes into the history as it
        // returns.
        let commands = CommandLog {
            process: Process::Client(client),
            log: Arc::clone(&log),
        };
        let endpoints = runtime.block_on(cluster.connect(&addrs, commands))?;
        let mut external = cluster.external_endpoints(&addrs, &endpoints);
        if options.lock.as_ref().is_some_and(CustomLock::is_heard) {
            let heard = runtime
                .block_on(wiretap::hear(&mut external, client, &log, &scripts))
                .map_err(|e| {
                    RunError::Environment(format!("the proxies hearing c{client}: {e}"))
                })?;
            hearing.push(heard);
        }
        let lock = match &options.lock {
            Some(custom) => custom
                .build(&ClientContext {
                    index: client,
                    endpoints: &endpoints,
                    key,
                    external: &external,
                    lease: Duration::from_millis(plan.ttl_ms),
                    log: &log,
                    dir: &dir,
                })
                .map_err(|e| match e {
                    // The lock says what it was given cannot work: the user's to fix.
                    LockError::InvalidConfig(_) | LockError::Unsupported { .. } => {
                        RunError::BadOption(format!("building {}: {e}", custom.name()))
                    }
                    // A client that died or hung before it could take part.
                    _ => RunError::Environment(format!("starting {}: {e}", custom.name())),
                })?,
            None => C::build_lock(&plan.lock, client, &endpoints, key)?,
        };
        let resource = resource_for(Some(&endpoints))?;
        handles.push((lock, endpoints, resource));
    }
    // The final read, by a process that holds no lock: on the lock's servers over a
    // connection of its own; the Redis counter needs no lock server.
    let reader = Process::Client(u32::try_from(clients).unwrap_or(u32::MAX));
    let final_reader = if in_db {
        let commands = CommandLog {
            process: reader,
            log: Arc::clone(&log),
        };
        let endpoints = runtime.block_on(cluster.connect(&addrs, commands))?;
        resource_for(Some(&endpoints))?
    } else {
        resource_for(None)?
    };

    let faults = Arc::new(ClientFaults::default());
    let controls: Vec<_> = proxies.iter().map(|(i, p)| (*i, p.control())).collect();
    let cluster = Mutex::new(cluster);
    let start = Instant::now();
    let (nemesis_done, nemesis_wait) = mpsc::channel::<()>();
    let (tick_done, tick_wait) = mpsc::channel::<()>();
    let done = std::thread::scope(|scope| {
        let (log_n, faults_n, schedule, cluster, controls) =
            (&*log, &*faults, &schedule, &cluster, &controls);
        let nemesis = scope.spawn(move || {
            let targets = Targets {
                cluster,
                proxies: controls,
                clients: faults_n,
                key,
            };
            nemesis::run(schedule, targets, log_n, start, &nemesis_wait)
        });
        scope.spawn(move || loop {
            cluster
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .tick(controls, log_n);
            if tick_wait.recv_timeout(Duration::from_millis(100)).is_ok() {
                return;
            }
        });
        runtime.block_on(async {
            tokio::time::sleep(Duration::from_millis(plan.client_delay_ms)).await;
            let shared = Arc::new(Shared {
                log: log.clone(),
                faults: faults.clone(),
                key: key.to_string(),
                lease: match &options.lock {
                    Some(_) => Lease::Fixed(Duration::from_millis(plan.ttl_ms)),
                    None => C::lease(&plan.lock, Duration::from_millis(plan.ttl_ms)),
                },
                work: Duration::from_millis(plan.work_ms),
                deadline: Instant::now() + duration,
            });
            let mut tasks = Vec::new();
            for (i, (lock, endpoints, resource)) in handles.drain(..).enumerate() {
                let id = u32::try_from(i).unwrap_or(u32::MAX);
                tasks.push(tokio::spawn(workload::client(
                    id,
                    lock,
                    endpoints,
                    resource,
                    shared.clone(),
                    seed,
                )));
            }
            while !tasks.iter().all(|t| t.is_finished()) {
                progress(Progress::Running {
                    elapsed: start.elapsed(),
                    total: duration + Duration::from_millis(plan.client_delay_ms),
                    events: log.count(),
                });
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // Every update is done: this read is the one lost updates are counted by.
            workload::read(&final_reader, reader, None, &log).await;
        });
        let _ = nemesis_done.send(());
        let _ = tick_done.send(());
        nemesis.join().unwrap_or_default()
    });
    let mut unfired = done.unfired.clone();
    for fault in faults.untaken() {
        unfired.push(format!(
            "{fault}: asked of a client, but none reached the middle of its critical section after that"
        ));
    }
    // The same step planned twice and missed twice is one reason, counted.
    let mut counted: Vec<(String, usize)> = Vec::new();
    for why in unfired {
        match counted.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => counted.push((why, 1)),
        }
    }
    let unfired: Vec<String> = counted
        .into_iter()
        .map(|(why, n)| if n > 1 { format!("{why} (×{n})") } else { why })
        .collect();
    drop(hearing);
    drop(proxies);
    runtime.shutdown_timeout(Duration::from_secs(1));

    let cluster = cluster.into_inner().unwrap_or_else(|p| p.into_inner());
    let spoiled = cluster.spoiled(done.primary_killed);
    let described = header.topology.clone();
    if let Some(keep) = &options.keep {
        let logs = keep.join("logs");
        if std::fs::create_dir_all(&logs).is_ok() {
            cluster.keep_logs(&logs);
        }
    }
    drop(cluster);
    if let Some(why) = spoiled {
        return Err(RunError::Unreliable(why));
    }
    if log.write_errors() > 0 {
        return Err(RunError::Environment(format!(
            "{} events could not be written to {}",
            log.write_errors(),
            path.display()
        )));
    }
    Ok(Attempted {
        dir,
        path,
        topology: described,
        schedule: schedule.to_header(),
        events: log.count(),
        unfired,
    })
}
