//! `locklab bench inventory`: every inventory strategy on real MariaDB, PostgreSQL and
//! Redis servers — N buyers for S seconds each (purchases/s, oversold units, p50/p99
//! latency), a contention sweep over N drawn as an SVG plot, or the write-up's own test
//! (`--seeds`: 5000 units, 5000 requests within a second, a pool of 10) beside its figures.

use std::path::PathBuf;
use std::time::Duration;

use locklab_jepsen::sql::inventory::{self, Backend, BenchOptions, Strategy, Workload};

use crate::output::{emit, error, spinner, ErrorKind, Format};

/// What `bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Benchmark {
    /// Every inventory strategy on real servers.
    Inventory,
}

/// The servers `--backend` names: one the inventory rows run on, or all (`None`).
#[derive(Clone, Copy, Debug)]
struct Servers(Option<Backend>);

fn servers(s: &str) -> Result<Servers, String> {
    match s {
        "all" => Ok(Servers(None)),
        one => Backend::parse(Some(one))
            .map(|b| Servers(Some(b)))
            .map_err(|e| format!("{e} (or all)")),
    }
}

/// The buyers counts of a sweep, in increasing order.
#[derive(Clone, Debug)]
struct Counts(Vec<usize>);

/// `1,4,16` as buyers counts, each from 1 to the most connections a cell opens.
fn counts(s: &str) -> Result<Counts, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let n: usize = part
            .parse()
            .map_err(|_| format!("expected buyers counts like 1,4,16, got {part:?}"))?;
        if !(1..=inventory::MAX_CONNECTIONS).contains(&n) {
            return Err(format!(
                "each count must be between 1 and {}, got {n}",
                inventory::MAX_CONNECTIONS
            ));
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(Counts(out))
}

/// A pause in seconds, zero allowed (`--retry-pause 0`: retry at once).
fn pause(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("expected seconds, got {s:?}"))?;
    if !(secs.is_finite() && (0.0..=10.0).contains(&secs)) {
        return Err(format!("expected seconds in [0, 10], got {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The contention sweep `--sweep` with no list runs.
const SWEEP: &str = "1,4,16,64,256,1000";

/// Arguments of `bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  locklab bench inventory                      8 buyers, 5 s per strategy and server
  locklab bench inventory --seeds              the write-up's test beside its figures
  locklab bench inventory --sweep --plot sweep.svg --duration 2
                                               purchases/s against 1 ... 1000 buyers")]
pub struct Args {
    /// What to measure.
    #[arg(value_enum)]
    what: Benchmark,
    /// Concurrent buyers, each with its own connection, when neither --sweep nor --seeds
    /// is given.
    #[arg(long, value_name = "N", default_value_t = 8)]
    buyers: usize,
    /// Seconds each strategy runs on each server at each buyers count (`--seconds` is its
    /// old spelling).
    #[arg(long, alias = "seconds", value_name = "SECS", default_value = "5", value_parser = crate::commands::run::parse_secs)]
    duration: Duration,
    /// A contention sweep: the buyers counts to measure at, comma-separated.
    #[arg(long, value_name = "N,N,…", num_args = 0..=1, default_missing_value = SWEEP, value_parser = counts)]
    sweep: Option<Counts>,
    /// The write-up's test: a stock of 5000, 5000 requests arriving within one second,
    /// served by a pool of 10 connections; its figures printed beside locklab's.
    #[arg(long)]
    seeds: bool,
    /// Units in stock for the arrivals test (implies --seeds).
    #[arg(long, value_name = "N")]
    stock: Option<i64>,
    /// Requests sent in the arrivals test (implies --seeds).
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Seconds the arrivals test's requests arrive in (implies --seeds).
    #[arg(long, value_name = "SECS", value_parser = crate::commands::run::parse_secs)]
    within: Option<Duration>,
    /// Connections serving the arrivals test's requests (implies --seeds).
    #[arg(long, value_name = "N")]
    pool: Option<usize>,
    /// Seconds an optimistic buyer waits after a lost compare-and-set before reading
    /// again (the write-up's recursive retry waits between calls; 0: at once).
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = pause)]
    retry_pause: Duration,
    /// Writes the closed workloads' purchases/s against buyers as an SVG figure.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// The servers: one the inventory rows run on (mariadb, postgres, redis), or all.
    #[arg(long, value_name = "SERVER", default_value = "all", value_parser = servers)]
    backend: Servers,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

impl Args {
    /// The workloads asked for: the arrivals test when any of its flags is given, a
    /// closed workload per sweep count, and the single closed one when neither.
    fn workloads(&self) -> Vec<Workload> {
        let mut out = Vec::new();
        let arrivals = self.seeds
            || self.stock.is_some()
            || self.requests.is_some()
            || self.within.is_some()
            || self.pool.is_some();
        if arrivals {
            let Workload::Arrivals {
                stock,
                requests,
                within,
                pool,
            } = Workload::SEEDS
            else {
                unreachable!("the seeds' workload is an arrivals workload")
            };
            out.push(Workload::Arrivals {
                stock: self.stock.unwrap_or(stock),
                requests: self.requests.unwrap_or(requests),
                within: self.within.unwrap_or(within),
                pool: self.pool.unwrap_or(pool),
            });
        }
        match &self.sweep {
            Some(Counts(counts)) => out.extend(counts.iter().map(|&buyers| Workload::Closed {
                buyers,
                duration: self.duration,
            })),
            None if !arrivals => out.push(Workload::Closed {
                buyers: self.buyers,
                duration: self.duration,
            }),
            None => {}
        }
        out
    }
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let Benchmark::Inventory = args.what;
    if let Err(code) = crate::output::writable(args.format, &[("--plot", args.plot.as_deref())]) {
        return code;
    }
    let workloads = args.workloads();
    let closed = workloads
        .iter()
        .any(|w| matches!(w, Workload::Closed { .. }));
    if args.plot.is_some() && !closed {
        return crate::bad_input(
            args.format,
            "--plot draws purchases/s against buyers, and --seeds alone has one pool: add --sweep",
        );
    }
    let backends = match args.backend.0 {
        None => Backend::ALL.to_vec(),
        Some(one) => vec![one],
    };
    crate::commands::interrupt::install("every server was stopped");
    let options = BenchOptions {
        workloads,
        backends,
        strategies: Strategy::ALL.to_vec(),
        retry_pause: args.retry_pause,
    };
    let bar = spinner(args.format, "starting servers");
    let rows = inventory::bench(&options, &mut |cell| bar.set_message(cell.to_string()));
    bar.finish_and_clear();
    let rows = match rows {
        Ok(r) => r,
        Err(e) => return error(args.format, ErrorKind::of_run(&e), &e.to_string()),
    };
    let mut plotted = None;
    if let Some(path) = &args.plot {
        let Some(svg) = inventory::plot(&rows) else {
            return error(args.format, ErrorKind::Internal, "no closed rows to plot");
        };
        if let Err(e) = std::fs::write(path, svg) {
            return error(
                args.format,
                ErrorKind::Environment,
                &format!("--plot {}: {e}", path.display()),
            );
        }
        plotted = Some(path.display().to_string());
    }
    let doc = crate::documents::Bench {
        rows: &rows,
        plot: plotted.clone(),
    };
    let text = || {
        let mut t = inventory::table(&rows);
        if let Some(p) = &plotted {
            t.push_str(&format!("plot: {p}\n"));
        }
        t
    };
    match emit(args.format, None, &doc, text) {
        Ok(()) => 0,
        Err(code) => code,
    }
}
