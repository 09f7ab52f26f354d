//! `locklab run inventory-*`: N buyers, each wanting one unit, against a stock of N − 1
//! (or the phantom inventory's orders of 3 and 2 against 4) on a real MariaDB,
//! PostgreSQL or Redis server; the history's resource operations checked by
//! the inventory spec (oversold units counted) and held against the model's verdict.

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::catalog;
use locklab_traces::format::{Header, ResourceSpec};

use super::buyers::{Buyer, Purchase, Ticks};
use super::server::StockServer;
use super::store::Store;
use super::{Backend, Row, Strategy};
use crate::log::Log;
use crate::random::FaultNames;
use crate::runner::{check, run_dir, Against, Progress, RunOptions, RunReport};
use crate::RunError;
use locklab_models::inventory::Orders;

/// Buyers when `--clients` does not say (the model row's bound).
const BUYERS: usize = 3;

/// Each buyer's work between its read and its write: long enough that concurrent
/// buyers' reads all come before the first write, as on a busy shop.
const WORK: Duration = Duration::from_millis(50);

/// The timestamp version's resolution (an `updated_at` in whole seconds).
pub const TICK: Duration = Duration::from_secs(1);

/// Runs the inventory row `row` on `backend`.
pub fn run(
    options: &RunOptions,
    row: Row,
    backend: Backend,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, RunError> {
    let (strategy, orders) = (row.strategy, row.orders);
    let id = row.id.name();
    if !strategy.runs_on(backend) {
        return Err(RunError::BadOption(format!(
            "--backend {}: {id} has no form there (WATCH compares the key, not a timestamp the client chose)",
            backend.name()
        )));
    }

    let scenario = catalog::row(row.id);
    let model =
        crate::runner::model_report(row.id, &locklab_models::catalog::Overrides::default())?;
    let expected = crate::runner::violated(&model)?;
    let clients = options.clients.unwrap_or(match orders {
        Orders::OneEach => BUYERS,
        // Alice and Bob.
        Orders::Phantom => 2,
    });
    if !(2..=64).contains(&clients) {
        return Err(RunError::BadOption(format!(
            "--clients must be between 2 and 64, got {clients}"
        )));
    }
    if options.duration.is_some() {
        return Err(RunError::BadOption(format!(
            "--duration: in {id} each buyer buys once; the run ends when they are done"
        )));
    }
    let initial = orders.stock(clients);
    let started = Instant::now();
    progress(Progress::Starting(1));
    let server = StockServer::start(backend)?;
    server.reset(initial)?;
    let url = server.url.clone();

    let dir = run_dir(options.keep.as_deref())?;
    let path = dir.path().join("history.jsonl");
    let mut header = Header::new(id, backend.history());
    let what = if backend == Backend::Redis {
        "`stock` key"
    } else {
        "`stock` row"
    };
    header.topology = format!(
        "{} on {}; resource: its {what} ({initial} units, {clients} buyers{})",
        backend.name(),
        server.addr(),
        ordering(orders, clients)
    );
    header.seed = Some(options.seed);
    header.resource = Some(ResourceSpec::Inventory {
        initial,
        writes_are_updates: true,
    });
    let log = Arc::new(
        Log::create(&path, &header)
            .map_err(|e| RunError::Environment(format!("{}: {e}", path.display())))?,
    );
    let outcomes = buy_all(&url, clients, (strategy, orders), &log, started, progress)?;
    if let Some(keep) = &options.keep {
        let logs = keep.join("logs");
        if std::fs::create_dir_all(&logs).is_ok() {
            let _ = std::fs::write(logs.join(format!("{}.log", backend.name())), server.log());
        }
    }
    drop(server);
    if log.write_errors() > 0 {
        return Err(RunError::Environment(format!(
            "{} events could not be written to {}",
            log.write_errors(),
            path.display()
        )));
    }
    progress(Progress::Checking);
    let against = Against {
        scenario,
        expected: &expected,
        unfired: Vec::new(),
        model_bound: None,
        faults: FaultNames::default(),
    };
    let checked = check(&path, options.html, options.check_budget, against)?;
    let bought = outcomes.iter().filter(|o| **o == Purchase::Bought).count();
    let mut report = checked.report;
    let mut history = Some(path.clone());
    if options.keep.is_none() {
        report.source = "the run's history (not kept: --out DIR keeps it)".into();
        history = None;
    }
    Ok(RunReport {
        id: id.to_string(),
        seed: options.seed,
        story: format!(
            "no fault: {clients} buyers, {}, against a stock of {initial} ({bought} purchases completed)",
            match orders {
                Orders::OneEach => "one unit each".to_string(),
                Orders::Phantom => ordering(orders, clients).trim_start_matches(", ").to_string(),
            }
        ),
        beyond_model: None,
        topology: header.topology,
        lock: strategy.name_on(backend).to_string(),
        jepsen_workload: None,
        schedule: Vec::new(),
        clients,
        attempts: 1,
        unreliable: Vec::new(),
        events: log.count(),
        history,
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        report,
        model,
        agreement: checked.agreement,
        timeline: checked.timeline,
        liveness: None,
        progress: None,
        order: None,
        waited: None,
        starvation: None,
        client_problems: checked.client_problems,
        nemesis: None,
        recorded: checked.history,
    })
}

/// Every buyer's purchase, side by side, each recorded in `log`; then the reader's
/// look at what is left (what oversold units and lost updates are counted by).
fn buy_all(
    url: &str,
    clients: usize,
    (strategy, orders): (Strategy, Orders),
    log: &Arc<Log>,
    started: Instant,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<Purchase>, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RunError::Environment(format!("tokio runtime: {e}")))?;
    let outcomes = runtime.block_on(async {
        let mut all = buyers(url, clients + 1, WORK, Some(log)).await?;
        let mut reader = all
            .pop()
            .ok_or_else(|| RunError::Internal("no reader".into()))?;
        // Tick 0 (the row's own version) starts as the buyers do.
        let origin = Instant::now();
        let tasks: Vec<_> = all
            .into_iter()
            .enumerate()
            .map(|(i, mut b)| {
                b.ticks.origin = origin;
                tokio::spawn(async move { b.buy(strategy, orders.units(i)).await })
            })
            .collect();
        progress(Progress::Running {
            elapsed: started.elapsed(),
            total: WORK,
            events: log.count(),
        });
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(
                t.await
                    .map_err(|e| RunError::Internal(format!("buyer task: {e}")))?,
            );
        }
        // Every purchase is done: the read oversold units and lost updates are counted by.
        reader.id = u32::try_from(clients).unwrap_or(u32::MAX);
        let _ = reader.read(false).await;
        Ok::<_, RunError>(outcomes)
    })?;
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(outcomes)
}

/// `, ordering 3, 2 units` for the phantom inventory's buyers; nothing when each wants
/// one.
fn ordering(orders: Orders, clients: usize) -> String {
    match orders {
        Orders::OneEach => String::new(),
        Orders::Phantom => {
            let units: Vec<String> = (0..clients).map(|i| orders.units(i).to_string()).collect();
            format!(", ordering {} units", units.join(", "))
        }
    }
}

/// The buyers of a run or a benchmark: one connection each, app instance `i % 2`.
pub(crate) async fn buyers(
    url: &str,
    n: usize,
    work: Duration,
    log: Option<&Arc<Log>>,
) -> Result<Vec<Buyer>, RunError> {
    let mutexes = [Arc::default(), Arc::default()];
    let ticks = Ticks {
        origin: Instant::now(),
        tick: TICK,
    };
    let mut out = Vec::new();
    for i in 0..n {
        let store = Store::connect(url)
            .await
            .map_err(|e| RunError::Environment(format!("connecting to {url}: {e}")))?;
        out.push(Buyer {
            id: u32::try_from(i).unwrap_or(u32::MAX),
            store,
            mutex: Arc::clone(&mutexes[i % 2]),
            ticks,
            work,
            retry_pause: Duration::ZERO,
            log: log.cloned(),
        });
    }
    Ok(out)
}
