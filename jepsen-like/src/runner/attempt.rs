//! One attempt of a run, in three steps that each own what they made:
//! [`Attempt::start`] (servers, proxies, the history's header, every client connected
//! and its lock built), [`Attempt::execute`] (the nemesis and the workload, to the final
//! read) and [`Attempt::stop`] (everything stopped, the servers' logs kept, whether the
//! machine spoiled the attempt). What is left is the history on disk.

use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use locklab_implementations::redis::sniff::ScriptBook;
use locklab_implementations::{DistributedLock, LockError};
use locklab_models::registry::Family as ModelFamily;
use locklab_servers::{RedisServer, Server};
use locklab_traces::format::{Header, Process, ResourceSpec};

use super::{jepsen_workload, run_dir, Progress, RunDir, RunOptions};
use crate::counter::harness::RedisCounter;
use crate::counter::Counter;
use crate::custom::ClientContext;
use crate::deadline::Deadline;
use crate::external::wiretap::{self, Heard};
use crate::family::{ActionOf, Client, CommandLog, Family};
use crate::log::Log;
use crate::nemesis::{self, ClientFaults, ClientsStart, Done, Targets};
use crate::plan::Plan;
use crate::proxy::Proxy;
use crate::schedule::Schedule;
use crate::servers::Servers;
use crate::workload::{self, OverlapWait, Shared};
use crate::RunError;

/// The lock every client contends for.
const KEY: &str = "locklab:lock";

/// The harness's own counter on its own Redis server.
const COUNTER: &str = "locklab:counter";

/// What an attempt left behind.
pub(crate) struct Attempted {
    /// Held until the history is checked: removed when dropped, unless `--keep`'s.
    pub(crate) _dir: RunDir,
    pub(crate) path: PathBuf,
    pub(crate) topology: String,
    pub(crate) schedule: Vec<serde_json::Value>,
    pub(crate) events: u64,
    /// The plan's fault steps that never fired, each with why.
    pub(crate) unfired: Vec<String>,
}

/// One client, ready: its lock, its connections and the counter it works on.
struct Ready<F: Family> {
    lock: Box<dyn DistributedLock>,
    client: F::Client,
    counter: Arc<dyn Counter>,
}

/// An attempt whose servers run and whose clients are connected.
pub(super) struct Attempt<'p, F: Family> {
    plan: &'p Plan<F>,
    /// Locked by the nemesis and the family's ticks while the workload runs.
    servers: Mutex<F::Servers>,
    runtime: tokio::runtime::Runtime,
    /// The run's proxies in front of the client nodes, by node index.
    proxies: Vec<(usize, Proxy)>,
    /// The harness's counter server, unless the work writes the lock's own servers.
    _counter_server: Option<RedisServer>,
    /// External clients' own proxies that hear their traffic.
    hearing: Vec<Heard>,
    log: Arc<Log>,
    header: Header,
    dir: RunDir,
    path: PathBuf,
    schedule: Schedule<ActionOf<F>>,
    clients: Vec<Ready<F>>,
    /// Reads the counter once every client is done: holds no lock.
    final_reader: (Process, Arc<dyn Counter>),
}

/// The clients of an attempt, connected, and what connecting them made.
struct Connected<F: Family> {
    clients: Vec<Ready<F>>,
    final_reader: (Process, Arc<dyn Counter>),
    hearing: Vec<Heard>,
}

/// What connecting the clients needs.
struct Connecting<'a, F: Family> {
    plan: &'a Plan<F>,
    servers: &'a F::Servers,
    runtime: &'a tokio::runtime::Runtime,
    log: &'a Arc<Log>,
    dir: &'a std::path::Path,
    /// The run's proxies' addresses, in the order of the client nodes.
    addrs: Vec<String>,
    /// The harness's counter server, unless the work writes the lock's own servers.
    counter_addr: Option<String>,
}

/// What the workload and the nemesis did.
pub(super) struct Executed {
    done: Done,
    faults: Arc<ClientFaults>,
}

impl<'p, F: Family> Attempt<'p, F> {
    /// Starts the servers (on this thread, which outlives the attempt: each server dies
    /// with the thread that started it), the proxies in front of them, the history,
    /// and `clients` clients with their locks.
    pub(super) fn start(
        plan: &'p Plan<F>,
        family: ModelFamily,
        options: &RunOptions,
        clients: usize,
        seed: u64,
    ) -> Result<Self, RunError> {
        // A random nemesis's schedule is random already, and its shrinker replays exact
        // times.
        let jitter = if options.random.is_some() { 0 } else { 20 };
        let schedule = Schedule::jittered(&plan.faults, jitter, seed);
        let mut servers = F::Servers::start(&plan.shape, plan.fake_clock, options.net)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| RunError::Environment(format!("tokio runtime: {e}")))?;
        let mut proxies = Vec::new();
        for i in servers.client_nodes() {
            let addr = servers
                .node(i)
                .map(|s| s.addr())
                .ok_or_else(|| RunError::Internal(format!("no node {i}")))?;
            let proxy = runtime
                .block_on(Proxy::start(&addr))
                .map_err(|e| RunError::Environment(format!("proxy for {addr}: {e}")))?;
            proxies.push((i, proxy));
        }
        // A custom lock brings no transaction or guarded write of the scenario's to
        // work in: it works on the harness's counter, which no fault reaches.
        let own_counter = options.lock.is_none() && F::own_counter(&plan.lock);
        let counter_server = if own_counter {
            None
        } else {
            Some(RedisServer::start().map_err(|e| RunError::Environment(e.to_string()))?)
        };

        let dir = run_dir(options.keep.as_deref())?;
        let path = dir.path().join("history.jsonl");
        let header = header(
            plan,
            family,
            options,
            &servers,
            counter_server.as_ref(),
            &schedule,
            seed,
        );
        let log = Arc::new(
            Log::create(&path, &header)
                .map_err(|e| RunError::Environment(format!("{}: {e}", path.display())))?,
        );
        let connected = Connecting {
            plan,
            servers: &servers,
            runtime: &runtime,
            log: &log,
            dir: dir.path(),
            addrs: proxies.iter().map(|(_, p)| p.addr()).collect(),
            counter_addr: counter_server.as_ref().map(|s| s.addr()),
        }
        .connect(options, clients)?;
        Ok(Attempt {
            plan,
            servers: Mutex::new(servers),
            runtime,
            proxies,
            _counter_server: counter_server,
            hearing: connected.hearing,
            log,
            header,
            dir,
            path,
            schedule,
            clients: connected.clients,
            final_reader: connected.final_reader,
        })
    }
}

impl<F: Family> Connecting<'_, F> {
    /// The counter one client works on: the harness's, or the lock's own servers' over
    /// the client's connections.
    fn counter_for(&self, client: Option<&F::Client>) -> Result<Arc<dyn Counter>, RunError> {
        match &self.counter_addr {
            Some(addr) => self
                .runtime
                .block_on(RedisCounter::connect(addr, COUNTER))
                .map(|c| Arc::new(c) as Arc<dyn Counter>)
                .map_err(|e| RunError::Environment(format!("resource server: {e}"))),
            None => client
                .and_then(|c| F::counter(&self.plan.lock, c))
                .ok_or_else(|| {
                    RunError::Internal(format!(
                        "{} has no counter of its own to work on",
                        self.plan.id
                    ))
                }),
        }
    }

    /// Connects `clients` clients and builds their locks (the scenario's, or
    /// `options.lock`), and the final reader.
    fn connect(&self, options: &RunOptions, clients: usize) -> Result<Connected<F>, RunError> {
        let addrs = &self.addrs;
        let mut ready = Vec::new();
        let mut hearing = Vec::new();
        // An external client's traffic is heard by proxies of its own; the scripts it
        // loads are known to every client's (one may run by hash what another loaded).
        let scripts = ScriptBook;
        for index in 0..clients {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            // Every command the client sends to a lock server goes into the history as
            // it returns.
            let commands = CommandLog {
                process: Process::Client(index),
                log: Arc::clone(self.log),
            };
            let addrs = &self.servers.addrs_for(index, addrs);
            let client = self
                .runtime
                .block_on(F::connect(self.servers, addrs, commands))?;
            let lock = match &options.lock {
                Some(custom) => {
                    let mut external = F::external_endpoints(self.servers, addrs, &client);
                    if custom.is_heard() {
                        let heard = self
                            .runtime
                            .block_on(wiretap::hear(&mut external, index, self.log, &scripts))
                            .map_err(|e| {
                                RunError::Environment(format!("the proxies hearing c{index}: {e}"))
                            })?;
                        hearing.push(heard);
                    }
                    custom
                        .build(&ClientContext {
                            index,
                            client: &client,
                            key: KEY,
                            external: &external,
                            lease: Duration::from_millis(self.plan.ttl_ms),
                            log: self.log,
                            dir: self.dir,
                        })
                        .map_err(|e| match e {
                            // The lock says what it was given cannot work: the user's to
                            // fix.
                            LockError::InvalidConfig(_) | LockError::Unsupported { .. } => {
                                RunError::BadOption(format!("building {}: {e}", custom.name()))
                            }
                            // A client that died or hung before it could take part.
                            _ => RunError::Environment(format!("starting {}: {e}", custom.name())),
                        })?
                }
                None => F::build_lock(&self.plan.lock, index, &client, KEY)?,
            };
            let counter = self.counter_for(Some(&client))?;
            ready.push(Ready {
                lock,
                client,
                counter,
            });
        }
        // The final read, by a process that holds no lock: on the lock's servers over a
        // connection of its own; the harness's counter needs no lock server.
        let reader = Process::Client(u32::try_from(clients).unwrap_or(u32::MAX));
        let counter = match &self.counter_addr {
            Some(_) => self.counter_for(None)?,
            None => {
                let commands = CommandLog {
                    process: reader,
                    log: Arc::clone(self.log),
                };
                let client = self
                    .runtime
                    .block_on(F::connect(self.servers, addrs, commands))?;
                self.counter_for(Some(&client))?
            }
        };
        Ok(Connected {
            clients: ready,
            final_reader: (reader, counter),
            hearing,
        })
    }
}

impl<F: Family> Attempt<'_, F> {
    /// Runs the nemesis and the workload to the end, then the final read of the
    /// counter.
    pub(super) fn execute(
        &mut self,
        options: &RunOptions,
        duration: Duration,
        seed: u64,
        progress: &mut dyn FnMut(Progress),
    ) -> Executed {
        let plan = self.plan;
        let faults = Arc::new(ClientFaults::default());
        let controls: Vec<_> = self
            .proxies
            .iter()
            .map(|(i, p)| (*i, p.control()))
            .collect();
        let (servers, log, runtime, schedule) =
            (&self.servers, &self.log, &self.runtime, &self.schedule);
        let ready = std::mem::take(&mut self.clients);
        let own: Vec<Vec<_>> = ready
            .iter()
            .map(|r| {
                r.client
                    .own_proxies()
                    .map(|p| p.controls())
                    .unwrap_or_default()
            })
            .collect();
        let final_reader = &self.final_reader;
        let start = Instant::now();
        let end = Arc::new(Deadline::new(
            start + Duration::from_millis(plan.client_delay_ms) + duration,
        ));
        // Time for the clients to show what the last fault does, should the event it
        // waited for come late (a first grant on a busy machine).
        let grace = duration / 2;
        let (nemesis_done, nemesis_wait) = mpsc::channel::<()>();
        let (tick_done, tick_wait) = mpsc::channel::<()>();
        let (may_start, clients_may_start) = tokio::sync::oneshot::channel::<()>();
        let done = std::thread::scope(|scope| {
            let (faults_n, controls, end_n, own) = (&*faults, &controls, &*end, &own);
            let nemesis = scope.spawn(move || {
                let targets = Targets {
                    cluster: servers,
                    proxies: controls,
                    clients: faults_n,
                    own,
                    key: KEY,
                    end: end_n,
                    grace,
                };
                let clients = ClientsStart {
                    at_ms: plan.client_delay_ms,
                    tell: may_start,
                };
                nemesis::run(schedule, targets, log, start, &nemesis_wait, clients)
            });
            scope.spawn(move || loop {
                servers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .tick(controls, log);
                if tick_wait.recv_timeout(Duration::from_millis(100)).is_ok() {
                    return;
                }
            });
            runtime.block_on(async {
                tokio::time::sleep(Duration::from_millis(plan.client_delay_ms)).await;
                // Dropped, never sent: the steps before the clients' start are done,
                // and the clients have the whole run from now.
                let _ = clients_may_start.await;
                end.at_least(Instant::now() + duration);
                let shared = Arc::new(Shared {
                    log: log.clone(),
                    faults: faults.clone(),
                    key: KEY.to_string(),
                    lease: match &options.lock {
                        Some(_) => locklab_implementations::Lease::Fixed(Duration::from_millis(
                            plan.ttl_ms,
                        )),
                        None => F::lease(&plan.lock, Duration::from_millis(plan.ttl_ms)),
                    },
                    work: Duration::from_millis(plan.work_ms),
                    overlap: plan
                        .overlap_within_ms
                        .map(|ms| OverlapWait::new(Duration::from_millis(ms))),
                    deadline: end.clone(),
                    // A team's own lock runs the row's workload, not its nesting.
                    nested: options.lock.is_none() && F::nested(&plan.lock),
                });
                let mut tasks = Vec::new();
                for (i, r) in ready.into_iter().enumerate() {
                    let id = u32::try_from(i).unwrap_or(u32::MAX);
                    tasks.push(tokio::spawn(workload::client(
                        id,
                        r.lock,
                        r.client,
                        r.counter,
                        shared.clone(),
                        seed,
                    )));
                }
                while !tasks.iter().all(|t| t.is_finished()) {
                    progress(Progress::Running {
                        elapsed: start.elapsed(),
                        total: end.get().saturating_duration_since(start),
                        events: log.count(),
                    });
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                // Every update is done: this read is the one lost updates are counted by.
                let (reader, counter) = final_reader;
                workload::read(&**counter, *reader, None, log).await;
            });
            let _ = nemesis_done.send(());
            let _ = tick_done.send(());
            nemesis.join().unwrap_or_default()
        });
        Executed { done, faults }
    }

    /// Stops everything this attempt started, keeps the servers' logs (with `--keep`),
    /// and says what is left: the history, or why the machine spoiled the attempt.
    pub(super) fn stop(
        self,
        executed: Executed,
        options: &RunOptions,
    ) -> Result<Attempted, RunError> {
        let Attempt {
            servers,
            runtime,
            proxies,
            hearing,
            log,
            header,
            dir,
            path,
            schedule,
            _counter_server,
            ..
        } = self;
        drop(hearing);
        drop(proxies);
        runtime.shutdown_timeout(Duration::from_secs(1));
        let servers = servers.into_inner().unwrap_or_else(|p| p.into_inner());
        let spoiled = servers.spoiled(executed.done.primary_killed);
        if let Some(keep) = &options.keep {
            let logs = keep.join("logs");
            if std::fs::create_dir_all(&logs).is_ok() {
                servers.keep_logs(&logs);
            }
        }
        drop(servers);
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
            _dir: dir,
            path,
            topology: header.topology,
            schedule: schedule.to_header(),
            events: log.count(),
            unfired: unfired(executed),
        })
    }
}

/// The steps that never fired: those the nemesis skipped or could not carry out, and
/// the client faults no client took; one line per reason, counted.
fn unfired(executed: Executed) -> Vec<String> {
    let mut reasons = executed.done.unfired;
    for fault in executed.faults.untaken() {
        reasons.push(format!(
            "{fault}: asked of a client, but none reached the middle of its critical section after that"
        ));
    }
    let mut counted: Vec<(String, usize)> = Vec::new();
    for why in reasons {
        match counted.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => counted.push((why, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(why, n)| if n > 1 { format!("{why} (×{n})") } else { why })
        .collect()
}

/// The history's header: what ran, on what, with which faults planned.
fn header<F: Family>(
    plan: &Plan<F>,
    family: ModelFamily,
    options: &RunOptions,
    servers: &F::Servers,
    counter_server: Option<&RedisServer>,
    schedule: &Schedule<ActionOf<F>>,
    seed: u64,
) -> Header {
    let mut header = Header::new(plan.id.name(), F::BACKEND);
    header.topology = match counter_server {
        Some(s) => format!("{}; resource {}", servers.describe(), s.addr()),
        None => format!(
            "{}; resource: a counter on the lock's own servers, written with the lock",
            servers.describe()
        ),
    };
    header.endpoints = servers.endpoint_names();
    header.nemesis = schedule.to_header();
    header.seed = Some(seed);
    for (tool, version) in servers.tools() {
        header.tools.insert(tool, version.into());
    }
    header.resource = Some(ResourceSpec::Counter { initial: 0 });
    header.late_expiry = F::LATE_EXPIRY;
    header.spurious_refusals = family.refuses_spuriously();
    if let Some(custom) = &options.lock {
        header.tools.insert("lock".into(), custom.name().into());
    }
    if let Some(w) = jepsen_workload(plan, options) {
        header.tools.insert("jepsen-workload".into(), w.into());
    }
    header
}
