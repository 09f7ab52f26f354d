//! `locklab bench inventory`: every strategy on every server, buyers buying for a fixed
//! time against a stock that never runs out, measured by completed purchases per
//! second, latency, and units sold that the stock row did not lose (each one a unit the
//! shop will sell again: oversold).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::buyers::{Purchase, Strategy};
use super::run::buyers;
use super::server::StockServer;
use super::Backend;
use crate::RunError;

/// What the benchmark measures.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Concurrent buyers (each its own connection).
    pub buyers: usize,
    /// How long each strategy runs.
    pub duration: Duration,
    /// The servers.
    pub backends: Vec<Backend>,
    /// The strategies to measure, each on every backend it has a form on (timestamp CAS has
    /// none on Redis); `locklab bench inventory` asks for all of them.
    pub strategies: Vec<Strategy>,
}

/// One strategy on one server.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct BenchRow {
    /// The strategy's name on this backend (the optimistic one is `WATCH + MULTI/EXEC` on
    /// Redis), as the table prints it.
    pub strategy: &'static str,
    /// Its catalog id, when it has one.
    pub id: Option<&'static str>,
    /// The server.
    pub backend: &'static str,
    /// Concurrent buyers, each on its own connection (`--buyers`, 1 to 64): the same in
    /// every row of one benchmark.
    pub buyers: usize,
    /// Seconds measured.
    pub seconds: f64,
    /// Purchases that sold a unit.
    pub purchases: u64,
    /// Purchases per second.
    pub per_second: f64,
    /// Sold units the stock row did not lose.
    pub oversold: i64,
    /// Purchases whose statements failed (outcome unknown).
    pub errors: u64,
    /// Median purchase latency (ms), retries and waits included.
    pub p50_ms: f64,
    /// 99th percentile purchase latency (ms).
    pub p99_ms: f64,
}

/// Far more than any run sells: the stock never runs out, so every purchase should
/// take a unit and the row's loss counts the units really taken.
const STOCK: i64 = 1_000_000_000;

/// Runs the benchmark; `progress` hears which cell runs.
pub fn bench(
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<BenchRow>, RunError> {
    if !(1..=64).contains(&options.buyers) {
        return Err(RunError::BadOption(format!(
            "--buyers must be between 1 and 64, got {}",
            options.buyers
        )));
    }
    if options.duration.is_zero() || options.duration > Duration::from_secs(600) {
        return Err(RunError::BadOption(format!(
            "--seconds must be in (0, 600], got {:?}",
            options.duration
        )));
    }
    let mut rows = Vec::new();
    for &backend in &options.backends {
        rows.extend(on(backend, options, progress)?);
    }
    Ok(rows)
}

fn on(
    backend: Backend,
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<BenchRow>, RunError> {
    let server = StockServer::start(backend)?;
    let url = server.url.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RunError::Environment(format!("tokio runtime: {e}")))?;
    let mut rows = Vec::new();
    for &strategy in options.strategies.iter().filter(|s| s.runs_on(backend)) {
        progress(&format!(
            "{} on {}",
            strategy.name_on(backend),
            backend.name()
        ));
        server.reset(STOCK)?;
        rows.push(runtime.block_on(cell(backend, &url, strategy, options))?);
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(rows)
}

async fn cell(
    backend: Backend,
    url: &str,
    strategy: Strategy,
    options: &BenchOptions,
) -> Result<BenchRow, RunError> {
    let mut all = buyers(url, options.buyers + 1, Duration::ZERO, None).await?;
    let mut reader = all
        .pop()
        .ok_or_else(|| RunError::Internal("no reader".into()))?;
    let start = Instant::now();
    let deadline = start + options.duration;
    let tasks: Vec<_> = all
        .into_iter()
        .map(|mut b| {
            b.ticks.origin = start;
            tokio::spawn(async move {
                let (mut bought, mut errors, mut lat) = (0u64, 0u64, Vec::new());
                while Instant::now() < deadline {
                    let t = Instant::now();
                    match b.buy(strategy).await {
                        Purchase::Bought => {
                            bought += 1;
                            lat.push(t.elapsed());
                        }
                        Purchase::Refused => {}
                        Purchase::Error(_) => errors += 1,
                    }
                }
                (bought, errors, lat)
            })
        })
        .collect();
    let (mut purchases, mut errors, mut lat) = (0u64, 0u64, Vec::new());
    for t in tasks {
        let (b, e, l) = t
            .await
            .map_err(|e| RunError::Internal(format!("buyer task: {e}")))?;
        purchases += b;
        errors += e;
        lat.extend(l);
    }
    let seconds = start.elapsed().as_secs_f64();
    let (left, _) = reader
        .read(false)
        .await
        .map_err(|p| RunError::Environment(format!("reading the stock back: {p:?}")))?;
    lat.sort_unstable();
    let pct = |p: f64| {
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len().max(1)) - 1;
        lat.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let sold = i64::try_from(purchases).unwrap_or(i64::MAX);
    Ok(BenchRow {
        strategy: strategy.name_on(backend),
        id: strategy.id().map(|id| id.name()),
        backend: backend.name(),
        buyers: options.buyers,
        seconds,
        purchases,
        per_second: purchases as f64 / seconds.max(f64::EPSILON),
        oversold: (sold - (STOCK - left)).max(0),
        errors,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
    })
}

/// The rows as a table.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = format!(
        "{:<26} {:<9} {:>7} {:>11} {:>9} {:>9} {:>9}\n",
        "strategy", "backend", "buyers", "purchases/s", "oversold", "p50 ms", "p99 ms"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<26} {:<9} {:>7} {:>11.0} {:>9} {:>9.2} {:>9.2}{}\n",
            r.strategy,
            r.backend,
            r.buyers,
            r.per_second,
            r.oversold,
            r.p50_ms,
            r.p99_ms,
            if r.errors > 0 {
                format!("  ({} errors)", r.errors)
            } else {
                String::new()
            }
        ));
    }
    out
}
