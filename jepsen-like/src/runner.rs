//! One `locklab run`: start the servers, record the workload under the nemesis, stop
//! everything, check the history read back from disk, and hold the verdict against the
//! model's. A run spoiled by the machine (Sentinel TILT, a failover that never came) is
//! retried and reported as such, never turned into a verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use locklab_implementations::redis::history::event_recorder;
use locklab_implementations::redis::{
    single_node, LuaLock, NodeOptions, Recorder, RedisNode, Redlock, WaitReplicas,
};
use locklab_implementations::DistributedLock;
use locklab_models::catalog;
use locklab_models::check::Limits;
use locklab_traces::check::{check_history, Options, Report};
use locklab_traces::format::{Header, Process, ResourceSpec};
use locklab_traces::timeline::offending_window;
use serde::Serialize;

use crate::agreement::{compare, expected_at_defaults, Agreement};
use crate::custom::CustomLock;
use crate::log::Log;
use crate::nemesis::{self, ClientPauses, Targets};
use crate::plan::{self, LockKind, Plan};
use crate::resource::Resource;
use crate::schedule::{Action, Schedule};
use crate::topology::{Shape, Topology};
use crate::workload::{self, Shared};
use crate::RunError;

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
    /// The nemesis schedule that ran.
    pub schedule: Schedule,
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
}

static RUN_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs `options.id` on real servers. `progress` is called from this thread.
pub fn run(
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let plan = plan::find(&options.id).map_err(|known| RunError::UnknownId {
        id: options.id.clone(),
        known,
    })?;
    let scenario = catalog::find(plan.id).map_err(|e| RunError::Internal(e.to_string()))?;
    let (plan, expected) = match options.replicas {
        None => (plan, expected_at_defaults(&scenario)),
        Some(r) => {
            let plan = plan::with_replicas(plan, r).map_err(RunError::BadOption)?;
            let expected = model_verdict(plan.id, r)?;
            (plan, expected)
        }
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
                let (mut report, agreement, timeline) = {
                    progress(Progress::Checking);
                    check(
                        &done.path,
                        options.html,
                        options.check_budget,
                        &scenario,
                        &expected,
                    )?
                };
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
                    schedule: done.schedule,
                    clients,
                    attempts: attempt,
                    unreliable,
                    events: done.events,
                    history: options.keep.as_ref().map(|_| done.path.clone()),
                    wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    report,
                    agreement,
                    timeline,
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

struct Attempted {
    dir: PathBuf,
    path: PathBuf,
    topology: String,
    schedule: Schedule,
    events: u64,
}

/// The properties the model violates for `id` with `replicas` replicas.
fn model_verdict(id: &str, replicas: usize) -> Result<Vec<&'static str>, RunError> {
    let overrides = catalog::Overrides {
        replicas: Some(replicas),
        ..catalog::Overrides::default()
    };
    let report = catalog::check(id, &overrides, Limits::default(), &mut |_| {})
        .map_err(|e| RunError::BadOption(e.to_string()))?;
    match report.verdict {
        catalog::Verdict::Holds => Ok(Vec::new()),
        catalog::Verdict::Violated(p) => Ok(p),
        catalog::Verdict::Unknown => Err(RunError::Unreliable(format!(
            "the model of {id} with {replicas} replicas gave no verdict within its limits"
        ))),
    }
}

fn check(
    path: &Path,
    html: bool,
    budget: CheckBudget,
    scenario: &catalog::Scenario,
    expected: &[&str],
) -> Result<(Report, Agreement, Option<Vec<String>>), RunError> {
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
    let agreement = compare(scenario, expected, &report);
    let timeline = offending_window(&history, &report);
    Ok((report, agreement, timeline))
}

fn run_dir(keep: Option<&Path>) -> Result<PathBuf, RunError> {
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

fn node_options() -> NodeOptions {
    NodeOptions {
        response_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(300),
        ..NodeOptions::default()
    }
}

async fn build_lock(
    plan: &Plan,
    custom: Option<&CustomLock>,
    endpoints: &[String],
    key: &str,
    recorder: Recorder,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let mut nodes = Vec::new();
    for (index, addr) in endpoints.iter().enumerate() {
        let options = NodeOptions {
            recorder: Some(recorder.clone()),
            index,
            ..node_options()
        };
        nodes.push(
            RedisNode::connect(addr, options)
                .await
                .map_err(|e| RunError::Environment(format!("connecting to {addr}: {e}")))?,
        );
    }
    if let Some(custom) = custom {
        return custom
            .build(&nodes, key)
            .map_err(|e| RunError::BadOption(format!("building {}: {e}", custom.name())));
    }
    let first = nodes
        .first()
        .ok_or_else(|| RunError::Internal("no lock endpoint".into()))?;
    Ok(match plan.lock {
        LockKind::SingleNode(id) => single_node(id, first, key)
            .ok_or_else(|| RunError::Internal(format!("no single-node lock {id}")))?,
        LockKind::LuaWait(replicas) => Box::new(LuaLock::new(first, key).wait_for_replicas(
            // Well inside the response timeout, or WAIT's own answer would come too late.
            WaitReplicas {
                replicas,
                timeout: Duration::from_millis(100),
            },
        )),
        LockKind::Redlock => {
            Box::new(Redlock::new(&nodes, key).map_err(|e| RunError::Internal(e.to_string()))?)
        }
    })
}

fn attempt_once(
    plan: &Plan,
    options: &RunOptions,
    clients: usize,
    duration: Duration,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Attempted, RunError> {
    let schedule = Schedule::jittered(&plan.faults, 20, seed);
    // Servers start on this thread, which outlives the run (they die with the thread
    // that started them).
    let mut topology = Topology::start_servers(plan.shape, plan.fake_clock)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RunError::Environment(format!("tokio runtime: {e}")))?;
    runtime.block_on(topology.start_proxies())?;

    let dir = run_dir(options.keep.as_deref())?;
    let path = dir.join("history.jsonl");
    let mut header = Header::new(plan.id, "redis");
    header.topology = topology.describe();
    header.nemesis = schedule.to_header();
    header.seed = Some(seed);
    header
        .tools
        .insert("redis".into(), topology.redis_version().into());
    header.resource = Some(ResourceSpec::Counter { initial: 0 });
    if let Some(custom) = &options.lock {
        header.tools.insert("lock".into(), custom.name().into());
    }
    let log = Arc::new(
        Log::create(&path, &header)
            .map_err(|e| RunError::Environment(format!("{}: {e}", path.display())))?,
    );

    let key = "locklab:lock";
    let endpoints: Vec<String> = topology.endpoints.iter().map(|(_, p)| p.addr()).collect();
    let resource_addr = topology.resource.addr();
    let mut handles = Vec::new();
    for i in 0..clients {
        // Every Redis command the client sends goes into the history as it returns.
        let process = Process::Client(u32::try_from(i).unwrap_or(u32::MAX));
        let sink = log.clone();
        let recorder = event_recorder(process, log.base(), move |e| sink.record_stamped(e));
        let lock = runtime.block_on(build_lock(
            plan,
            options.lock.as_ref(),
            &endpoints,
            key,
            recorder,
        ))?;
        let resource = runtime
            .block_on(Resource::connect(&resource_addr, "locklab:counter"))
            .map_err(|e| RunError::Environment(format!("resource server: {e}")))?;
        handles.push((lock, resource));
    }
    let final_reader = runtime
        .block_on(Resource::connect(&resource_addr, "locklab:counter"))
        .map_err(|e| RunError::Environment(format!("resource server: {e}")))?;

    let pauses = Arc::new(ClientPauses::default());
    let proxies = topology.proxy_controls();
    let names: BTreeMap<String, String> = topology
        .servers
        .iter()
        .map(|(n, s)| (s.addr(), n.clone()))
        .collect();
    let master_proxy = match plan.shape {
        Shape::Sentinel { .. } => proxies.get("master").cloned(),
        _ => None,
    };
    let start = Instant::now();
    let (nemesis_done, nemesis_wait) = mpsc::channel::<()>();
    let (follow_done, follow_wait) = mpsc::channel::<()>();
    let Topology {
        servers, sentinels, ..
    } = &mut topology;
    let failed_over = std::thread::scope(|scope| {
        let log_n = &*log;
        let pauses_n = &*pauses;
        let schedule = &schedule;
        scope.spawn(move || {
            let targets = Targets {
                servers,
                proxies,
                pauses: pauses_n,
            };
            nemesis::run(schedule, targets, log_n, start, &nemesis_wait);
        });
        let follower = master_proxy.as_ref().map(|proxy| {
            let sentinels = &*sentinels;
            let names = &names;
            scope
                .spawn(move || nemesis::follow_master(sentinels, proxy, names, log_n, &follow_wait))
        });
        runtime.block_on(async {
            tokio::time::sleep(Duration::from_millis(plan.client_delay_ms)).await;
            let shared = Arc::new(Shared {
                log: log.clone(),
                pauses: pauses.clone(),
                key: key.to_string(),
                ttl: Duration::from_millis(plan.ttl_ms),
                work: Duration::from_millis(plan.work_ms),
                deadline: Instant::now() + duration,
            });
            let mut tasks = Vec::new();
            for (i, (lock, resource)) in handles.drain(..).enumerate() {
                let id = u32::try_from(i).unwrap_or(u32::MAX);
                tasks.push(tokio::spawn(workload::client(
                    id,
                    lock,
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
            let reader = Process::Client(u32::try_from(clients).unwrap_or(u32::MAX));
            workload::read(&final_reader, reader, None, &log).await;
        });
        let _ = nemesis_done.send(());
        let _ = follow_done.send(());
        follower.is_some_and(|f| f.join().unwrap_or(false))
    });
    runtime.shutdown_timeout(Duration::from_secs(1));

    let unreliable = topology.sentinel_tilt();
    let described = topology.describe();
    if let Some(keep) = &options.keep {
        keep_logs(&topology, keep);
    }
    drop(topology);
    if let Some(why) = unreliable {
        return Err(RunError::Unreliable(why));
    }
    let expects_failover = matches!(plan.shape, Shape::Sentinel { .. })
        && schedule
            .steps
            .iter()
            .any(|s| matches!(&s.action, Action::Kill { target } if target == "master"));
    if expects_failover && !failed_over {
        return Err(RunError::Unreliable(
            "Sentinel did not fail over during the run".into(),
        ));
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
        schedule,
        events: log.count(),
    })
}

fn keep_logs(topology: &Topology, dir: &Path) {
    let logs = dir.join("logs");
    if std::fs::create_dir_all(&logs).is_err() {
        return;
    }
    for (name, s) in &topology.servers {
        let _ = std::fs::write(logs.join(format!("{name}.log")), s.log());
    }
    for (i, s) in topology.sentinels.iter().enumerate() {
        let _ = std::fs::write(logs.join(format!("sentinel{}.log", i + 1)), s.log());
    }
}
