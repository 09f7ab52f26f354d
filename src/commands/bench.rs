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

/// The servers `bench inventory` runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Servers {
    /// MariaDB, PostgreSQL and Redis.
    All,
    /// MariaDB.
    Mariadb,
    /// PostgreSQL.
    Postgres,
    /// Redis.
    Redis,
}

/// Arguments of `bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to measure.
    #[arg(value_enum)]
    what: Benchmark,
    /// Concurrent buyers, each with its own connection.
    #[arg(long, default_value_t = 8)]
    buyers: usize,
    /// Seconds each strategy runs on each server.
    #[arg(long, default_value = "5", value_parser = crate::commands::run::parse_secs)]
    seconds: Duration,
    /// The servers.
    #[arg(long, value_enum, default_value_t = Servers::All)]
    backend: Servers,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let Benchmark::Inventory = args.what;
    let backends = match args.backend {
        Servers::All => Backend::ALL.to_vec(),
        Servers::Mariadb => vec![Backend::MariaDb],
        Servers::Postgres => vec![Backend::Postgres],
        Servers::Redis => vec![Backend::Redis],
    };
    let _ = ctrlc::set_handler(|| {
        locklab_servers::reaper::kill_all();
        eprintln!("\nlocklab: interrupted; every server was stopped");
        std::process::exit(130);
    });
    let options = BenchOptions {
        buyers: args.buyers,
        duration: args.seconds,
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
    match emit(args.format, None, &rows, || inventory::table(&rows)) {
        Ok(()) => 0,
        Err(code) => code,
    }
}
