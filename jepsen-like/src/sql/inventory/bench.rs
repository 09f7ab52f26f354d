//! `locklab bench inventory`: every strategy on every server under one or more
//! workloads, measured by completed purchases per second, latency, and units sold that
//! the stock row did not lose (each one a unit the shop will sell again: oversold).
//!
//! Two workloads. *Closed*: N buyers, each on its own connection, buy one unit after
//! another for a fixed time against a stock that never runs out — a contention sweep is
//! the same at several N. *Arrivals*: the write-ups' test (000: a stock of 5000, JMeter
//! sending 5000 requests within one second), each request served by the next free
//! connection of a pool, its latency counted from its arrival, so time spent queueing for
//! a connection is in it as it is in JMeter's samples.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::buyers::{Buyer, Purchase, Strategy};
use super::run::buyers;
use super::server::StockServer;
use super::Backend;
use crate::RunError;

/// How purchases reach the servers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Workload {
    /// `buyers` buyers, each on its own connection, buying back to back for `duration`
    /// against a stock that never runs out.
    Closed {
        /// Concurrent buyers (1 to 1000).
        buyers: usize,
        /// How long each strategy runs.
        duration: Duration,
    },
    /// `requests` purchases arriving evenly within `within` against `stock` units, served
    /// by a pool of `pool` connections in arrival order.
    Arrivals {
        /// Units on the shelf at the start.
        stock: i64,
        /// Purchases sent.
        requests: u64,
        /// The time they arrive in.
        within: Duration,
        /// Connections serving them (HikariCP's default pool is 10).
        pool: usize,
    },
}

impl Workload {
    /// The write-up's test: a stock of 5000, 5000 requests within one second, and the
    /// connection pool of a Spring Boot service left at HikariCP's default of 10.
    pub const SEEDS: Workload = Workload::Arrivals {
        stock: 5000,
        requests: 5000,
        within: Duration::from_secs(1),
        pool: 10,
    };

    /// Connections the workload opens.
    pub fn connections(self) -> usize {
        match self {
            Workload::Closed { buyers, .. } => buyers,
            Workload::Arrivals { pool, .. } => pool,
        }
    }

    fn check(self) -> Result<(), RunError> {
        let bad = |m: String| Err(RunError::BadOption(m));
        let limit = |d: Duration| !d.is_zero() && d <= Duration::from_secs(600);
        match self {
            Workload::Closed { buyers, duration } => {
                if !(1..=MAX_CONNECTIONS).contains(&buyers) {
                    return bad(format!(
                        "--buyers must be between 1 and {MAX_CONNECTIONS}, got {buyers}"
                    ));
                }
                if !limit(duration) {
                    return bad(format!(
                        "--duration must be in (0, 600] s, got {duration:?}"
                    ));
                }
            }
            Workload::Arrivals {
                stock,
                requests,
                within,
                pool,
            } => {
                if !(1..=MAX_CONNECTIONS).contains(&pool) {
                    return bad(format!(
                        "--pool must be between 1 and {MAX_CONNECTIONS}, got {pool}"
                    ));
                }
                if !(1..=10_000_000).contains(&requests) {
                    return bad(format!(
                        "--requests must be between 1 and 10000000, got {requests}"
                    ));
                }
                if stock < 0 {
                    return bad(format!("--stock must be at least 0, got {stock}"));
                }
                if !limit(within) {
                    return bad(format!("--within must be in (0, 600] s, got {within:?}"));
                }
            }
        }
        Ok(())
    }
}

/// The most connections one cell opens: the servers are started to accept them.
pub const MAX_CONNECTIONS: usize = 1000;

/// What the benchmark measures.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The workloads, each run on every server with every strategy (a sweep is several
    /// closed workloads).
    pub workloads: Vec<Workload>,
    /// The servers.
    pub backends: Vec<Backend>,
    /// The strategies to measure, each on every backend it has a form on (timestamp CAS has
    /// none on Redis); `locklab bench inventory` asks for all of them.
    pub strategies: Vec<Strategy>,
    /// How long an optimistic buyer waits after a lost compare-and-set before it reads
    /// again (the write-up's recursive retry waits, "递归调用时需要间隔"; zero: at once).
    pub retry_pause: Duration,
}

/// One strategy on one server under one workload.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct BenchRow {
    /// The strategy's name on this backend (the optimistic one is `WATCH + MULTI/EXEC` on
    /// Redis), as the table prints it.
    pub strategy: &'static str,
    /// Its catalog id, when it has one.
    pub id: Option<&'static str>,
    /// The server.
    pub backend: &'static str,
    /// `closed` (buyers back to back for a time) or `arrivals` (requests arriving within
    /// a time, served by a pool).
    pub workload: &'static str,
    /// Connections: the concurrent buyers of a closed workload, the pool of arrivals.
    pub buyers: usize,
    /// Purchases sent (arrivals only).
    pub requests: Option<u64>,
    /// Units at the start (arrivals only: a closed workload's stock never runs out).
    pub stock: Option<i64>,
    /// Units the row still holds at the end (arrivals only).
    pub left: Option<i64>,
    /// Seconds from the start to the last purchase's end.
    pub seconds: f64,
    /// Purchases that sold a unit.
    pub purchases: u64,
    /// Purchases told there was no stock.
    pub refused: u64,
    /// Purchases per second.
    pub per_second: f64,
    /// Sold units the stock row did not lose.
    pub oversold: i64,
    /// Purchases whose statements failed (outcome unknown).
    pub errors: u64,
    /// Median purchase latency (ms), retries and waits included (arrivals: from the
    /// request's arrival, queueing for a connection included).
    pub p50_ms: f64,
    /// 99th percentile purchase latency (ms).
    pub p99_ms: f64,
    /// The write-up's figure for the same strategy on the same kind of server
    /// (purchases/s; arrivals only, where it gives one).
    pub seeds_per_second: Option<f64>,
}

/// Far more than any closed run sells: the stock never runs out, so every purchase
/// should take a unit and the row's loss counts the units really taken.
const ENDLESS: i64 = 1_000_000_000;

/// Runs the benchmark; `progress` hears which cell runs.
pub fn bench(
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<BenchRow>, RunError> {
    for w in &options.workloads {
        w.check()?;
    }
    if options.retry_pause > Duration::from_secs(10) {
        return Err(RunError::BadOption(format!(
            "--retry-pause must be at most 10 s, got {:?}",
            options.retry_pause
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
    for &workload in &options.workloads {
        progress(&format!(
            "{}: opening {} connections",
            backend.name(),
            workload.connections()
        ));
        // One set of connections per workload, reused by every strategy: a thousand
        // PostgreSQL connections take seconds to open.
        let mut all = runtime.block_on(buyers(
            &url,
            workload.connections() + 1,
            Duration::ZERO,
            None,
        ))?;
        let mut reader = all
            .pop()
            .ok_or_else(|| RunError::Internal("no reader".into()))?;
        for b in &mut all {
            b.retry_pause = options.retry_pause;
        }
        for &strategy in options.strategies.iter().filter(|s| s.runs_on(backend)) {
            progress(&format!(
                "{} on {}, {} connections",
                strategy.name_on(backend),
                backend.name(),
                workload.connections()
            ));
            let stock = match workload {
                Workload::Closed { .. } => ENDLESS,
                Workload::Arrivals { stock, .. } => stock,
            };
            server.reset(stock)?;
            let (back, measured) = runtime.block_on(cell(all, strategy, workload))?;
            all = back;
            let (left, _) = runtime
                .block_on(reader.read(false))
                .map_err(|p| RunError::Environment(format!("reading the stock back: {p:?}")))?;
            rows.push(measured.row(backend, strategy, workload, stock, left));
        }
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(rows)
}

/// What one cell's buyers counted.
#[derive(Default)]
struct Measured {
    purchases: u64,
    refused: u64,
    errors: u64,
    latencies: Vec<Duration>,
    seconds: f64,
}

impl Measured {
    fn add(&mut self, other: Measured) {
        self.purchases += other.purchases;
        self.refused += other.refused;
        self.errors += other.errors;
        self.latencies.extend(other.latencies);
    }

    fn count(&mut self, purchase: Purchase, latency: Duration) {
        match purchase {
            Purchase::Bought => {
                self.purchases += 1;
                self.latencies.push(latency);
            }
            Purchase::Refused => self.refused += 1,
            Purchase::Error(_) => self.errors += 1,
        }
    }

    fn row(
        mut self,
        backend: Backend,
        strategy: Strategy,
        workload: Workload,
        stock: i64,
        left: i64,
    ) -> BenchRow {
        self.latencies.sort_unstable();
        let lat = &self.latencies;
        let pct = |p: f64| {
            let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len().max(1)) - 1;
            lat.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let sold = i64::try_from(self.purchases).unwrap_or(i64::MAX);
        let arrivals = match workload {
            Workload::Arrivals { requests, .. } => Some(requests),
            Workload::Closed { .. } => None,
        };
        BenchRow {
            strategy: strategy.name_on(backend),
            id: strategy.id().map(|id| id.name()),
            backend: backend.name(),
            workload: if arrivals.is_some() {
                "arrivals"
            } else {
                "closed"
            },
            buyers: workload.connections(),
            requests: arrivals,
            stock: arrivals.map(|_| stock),
            left: arrivals.map(|_| left),
            seconds: self.seconds,
            purchases: self.purchases,
            refused: self.refused,
            per_second: self.purchases as f64 / self.seconds.max(f64::EPSILON),
            oversold: (sold - (stock - left)).max(0),
            errors: self.errors,
            p50_ms: pct(0.50),
            p99_ms: pct(0.99),
            seeds_per_second: arrivals.and_then(|_| super::seeds::seeds(strategy, backend)),
        }
    }
}

/// Runs one strategy under one workload with `all` buyers and gives them back.
async fn cell(
    all: Vec<Buyer>,
    strategy: Strategy,
    workload: Workload,
) -> Result<(Vec<Buyer>, Measured), RunError> {
    let start = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = all
        .into_iter()
        .map(|mut b| {
            b.ticks.origin = start;
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut m = Measured::default();
                match workload {
                    Workload::Closed { duration, .. } => {
                        let deadline = start + duration;
                        while Instant::now() < deadline {
                            let t = Instant::now();
                            let p = b.buy(strategy, 1).await;
                            m.count(p, t.elapsed());
                        }
                    }
                    Workload::Arrivals {
                        requests, within, ..
                    } => loop {
                        // The next request to arrive goes to the first connection free.
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= requests {
                            break;
                        }
                        let nanos = within.as_nanos() * u128::from(i) / u128::from(requests);
                        let arrival =
                            start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
                        if arrival > Instant::now() {
                            tokio::time::sleep_until(arrival.into()).await;
                        }
                        let p = b.buy(strategy, 1).await;
                        m.count(p, arrival.elapsed());
                    },
                }
                (b, m)
            })
        })
        .collect();
    let (mut back, mut total) = (Vec::new(), Measured::default());
    for t in tasks {
        let (b, m) = t
            .await
            .map_err(|e| RunError::Internal(format!("buyer task: {e}")))?;
        back.push(b);
        total.add(m);
    }
    total.seconds = start.elapsed().as_secs_f64();
    Ok((back, total))
}
