//! `locklab bench inventory`: every inventory strategy on real MariaDB and PostgreSQL
//! servers, N buyers for S seconds each: purchases/s, oversold units, p50/p99 latency.

use std::time::Duration;

use locklab_jepsen::sql::inventory::{self, Backend, BenchOptions, Strategy};

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

/// Arguments of `bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to measure.
    #[arg(value_enum)]
    what: Benchmark,
    /// Concurrent buyers, each with its own connection.
    #[arg(long, value_name = "N", default_value_t = 8)]
    buyers: usize,
    /// Seconds each strategy runs on each server (`--seconds` is its old spelling).
    #[arg(long, alias = "seconds", value_name = "SECS", default_value = "5", value_parser = crate::commands::run::parse_secs)]
    duration: Duration,
    /// The servers: one the inventory rows run on (mariadb, postgres, redis), or all.
    #[arg(long, value_name = "SERVER", default_value = "all", value_parser = servers)]
    backend: Servers,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let Benchmark::Inventory = args.what;
    let backends = match args.backend.0 {
        None => Backend::ALL.to_vec(),
        Some(one) => vec![one],
    };
    crate::commands::interrupt::install("every server was stopped");
    let options = BenchOptions {
        buyers: args.buyers,
        duration: args.duration,
        backends,
        strategies: Strategy::ALL.to_vec(),
    };
    let bar = spinner(args.format, "starting servers");
    let rows = inventory::bench(&options, &mut |cell| bar.set_message(cell.to_string()));
    bar.finish_and_clear();
    let rows = match rows {
        Ok(r) => r,
        Err(e) => return error(args.format, ErrorKind::of_run(&e), &e.to_string()),
    };
    let doc = crate::documents::Bench { rows: &rows };
    match emit(args.format, None, &doc, || inventory::table(&rows)) {
        Ok(()) => 0,
        Err(code) => code,
    }
}
