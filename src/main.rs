//! `locklab`: model-check distributed lock protocols and check recorded histories.
//!
//! Exit codes ([`output::EXIT_CODES`], in every `--help`): 0 the property holds / the
//! history is fine; 1 a violation was found; 2 bad usage or bad input; 3 unknown (a bound
//! or timeout was hit first, or a run tested nothing); 4 could not run (the machine, or
//! a bug in locklab).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod commands;
mod documents;
mod output;

use output::Format;

/// A search allocates and frees a state copy per successor: mimalloc takes about a
/// tenth off the Redis failover search's time next to glibc's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's own, in the library the global allocator links.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e`, v2 and v3 alike).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Gives freed memory back to the system at once rather than a second later. A history
/// check builds a million operations, frees them and builds the next check's: the
/// delay kept a check's freed memory beside the next one's, an eighth of a 10-minute
/// run's peak (962 MB, 836 MB without it). The model checker keeps the delay: it frees
/// and takes back a state's memory at every step.
fn purge_freed_memory_at_once() {
    // SAFETY: a mimalloc function with no precondition; setting an option is safe from
    // any thread at any time, and 0 is a valid purge delay (immediate).
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

/// Formal-model checker and linearizability test suite for distributed locks.
#[derive(Parser, Debug)]
#[command(name = "locklab", version, about, long_about = None)]
struct Cli {
    /// Colour the verdicts of text output: auto (when standard output is a terminal
    /// and NO_COLOR is unset), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = output::Color::Auto)]
    color: output::Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    // Listed as a newcomer meets them: the models, then histories, then real runs.
    /// The scenario catalog: every protocol and fault, with its expected verdict and
    /// lesson.
    Models(commands::models::Args),
    /// The teaching narrative of a scenario, step by step.
    Explain(commands::explain::Args),
    /// Model-check one scenario, or your own protocol file: verdict and shortest
    /// counterexample story.
    Check(commands::check::Args),
    /// Every scenario: verdict, expected, states, time.
    Matrix(commands::matrix::Args),
    /// Write one HTML page per scenario (its sequence diagram) and an index over the
    /// catalog.
    Report(commands::report::Args),
    /// Serve stateright's Explorer for a scenario (loopback only).
    Explore(commands::explore::Args),
    /// Check a recorded or imported history: mutual exclusion, lock and resource
    /// linearizability (porcupine-rs), fencing.
    CheckHistory(commands::check_history::Args),
    /// Write a history (locklab's, or any format check-history reads) as Jepsen EDN, or
    /// as locklab JSON Lines.
    Export(commands::export::Args),
    /// Print shell completions (bash, zsh, fish, powershell, elvish) or the man page.
    Generate(commands::generate::Args),
    /// Run a scenario on real servers under real faults; check the recorded history
    /// and compare the verdict with the model's.
    #[cfg(feature = "harness")]
    Run(commands::run::Args),
    /// Gate a lock client (any program speaking the external-client protocol) in CI:
    /// run the scenarios a config names, judge what must hold, write JUnit XML and HTML.
    #[cfg(feature = "harness")]
    Gate(commands::gate::Args),
    /// Measure on real servers: `bench inventory` times every inventory strategy on
    /// MariaDB, PostgreSQL and Redis (purchases/s, oversold units, latency).
    #[cfg(feature = "sql")]
    Bench(commands::bench::Args),
    /// Run a scenario on real servers (not in this build: needs the `run` feature).
    #[cfg(not(feature = "harness"))]
    Run(commands::unbuilt::Args),
    /// Gate a lock client in CI (not in this build: needs the `run` feature).
    #[cfg(not(feature = "harness"))]
    Gate(commands::unbuilt::Args),
    /// Measure on real servers (not in this build: needs the `sql` feature).
    #[cfg(not(feature = "sql"))]
    Bench(commands::unbuilt::Args),
}

/// Whether the command line asks for JSON, read before clap has parsed it (a usage
/// error must still come out as JSON).
pub(crate) fn wants_json(args: &[std::ffi::OsString]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
}

/// What to try first, in the top-level help.
const EXAMPLES: &str = "Examples:
  locklab explain redis-failover               the failover story, step by step
  locklab check redis-lua --faults pause=1     one scenario at other bounds
  locklab check --protocol my-lock.toml pause  your own protocol under a fault
  locklab check-history history.jsonl          a recorded history (Jepsen EDN too)
  locklab run redis-failover                   the same fault on real servers (feature `run`)";

/// The command line, with the exit codes in every command's help.
fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// The command line's definition, as parsed, completed and documented.
fn command() -> clap::Command {
    // Help wraps at the terminal's width, at most 100 columns, so that long flag
    // descriptions stay readable on a wide screen.
    Cli::command()
        .max_term_width(100)
        .after_help(format!("{EXAMPLES}\n\n{}", output::EXIT_CODES))
        .mut_subcommands(|c| c.max_term_width(100).after_help(output::EXIT_CODES))
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version with exit 0 and usage errors with exit 2.
            let code = e.exit_code();
            let args: Vec<_> = std::env::args_os().collect();
            if code != 0 && wants_json(&args) {
                let message = e.render().to_string();
                let message = message.trim().trim_start_matches("error: ");
                return ExitCode::from(output::error(
                    Format::Json,
                    output::ErrorKind::Usage,
                    message,
                ));
            }
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    if !matches!(
        cli.command,
        Command::Run(_) | Command::Gate(_) | Command::Explore(_) | Command::Bench(_)
    ) {
        // `locklab matrix | head` should end quietly, as any Unix filter does, rather
        // than panic on a closed stdout. `run` and `explore` keep Rust's default
        // (SIGPIPE ignored): they write to servers', clients' and browsers' pipes and
        // sockets, where a vanished reader is an error to handle, not a reason to die.
        // SAFETY: called before any thread starts; SIG_DFL is a valid disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    output::set_color(cli.color);
    if matches!(cli.command, Command::Run(_) | Command::CheckHistory(_)) {
        purge_freed_memory_at_once();
    }
    if matches!(
        cli.command,
        Command::Check(_)
            | Command::Explain(_)
            | Command::Matrix(_)
            | Command::Models(_)
            | Command::Report(_)
    ) {
        commands::interrupt::stop_searches();
    }
    let code = match cli.command {
        Command::CheckHistory(args) => commands::check_history::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Generate(args) => commands::generate::run(&args, command()),
        Command::Models(args) => commands::models::run(args),
        Command::Check(args) => match commands::check::protocol_request(&args) {
            Some(Ok(request)) => commands::check_protocol::run(request),
            Some(Err(code)) => code,
            None => commands::check::run(args),
        },
        Command::Explain(args) => commands::explain::run(args),
        Command::Explore(args) => commands::explore::run(args),
        Command::Matrix(args) => commands::matrix::run(args),
        Command::Report(args) => commands::report::run(args),
        #[cfg(feature = "harness")]
        Command::Run(args) => commands::run::run(args),
        #[cfg(feature = "harness")]
        Command::Gate(args) => commands::gate::run(args),
        #[cfg(feature = "sql")]
        Command::Bench(args) => commands::bench::run(args),
        #[cfg(not(feature = "harness"))]
        Command::Run(args) => commands::unbuilt::run("run", "run", &args),
        #[cfg(not(feature = "harness"))]
        Command::Gate(args) => commands::unbuilt::run("gate", "run", &args),
        #[cfg(not(feature = "sql"))]
        Command::Bench(args) => commands::unbuilt::run("bench", "sql", &args),
    };
    commands::interrupt::settle();
    ExitCode::from(code)
}

/// Prints a usage error (a flag, an id, a config) in the requested format and gives
/// exit code 2.
pub fn bad_input(format: Format, message: &str) -> u8 {
    output::error(format, output::ErrorKind::Usage, message)
}
