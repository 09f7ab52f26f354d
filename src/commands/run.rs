//! `locklab run ID`: the scenario on real servers under real faults, the history
//! checked, the verdict held against the model's.

use std::path::PathBuf;
use std::time::Duration;

use locklab_jepsen::external::ExternalClient;
use locklab_jepsen::random::{NemesisReport, RandomNemesis};
use locklab_jepsen::{
    run as run_scenario, CheckBudget, CustomLock, Progress, RunError, RunOptions, RunReport,
};

use crate::bad_input;
use crate::commands::check_history::{text as check_text, verdict_word};
use crate::output::{emit, error, spinner, ErrorKind, Format};
use locklab_jepsen::agreement::answer_word;

/// Arguments of `run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The catalog id (`locklab run --list` shows which run on real servers).
    id: Option<String>,
    /// List the scenarios that run on real servers.
    #[arg(long)]
    list: bool,
    /// Concurrent clients (default: the scenario's).
    #[arg(long, value_name = "N")]
    clients: Option<usize>,
    /// Replicas behind the master (failover scenarios; default 1). The model is checked
    /// at the same bound, and the run compared with that verdict.
    #[arg(long, value_name = "N")]
    replicas: Option<usize>,
    /// Seconds the clients keep taking the lock (default: the scenario's).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    duration: Option<Duration>,
    /// Seed of the fault timing and the clients' think times.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Keep the history (history.jsonl) and the server logs in this directory
    /// (`--keep` is its old spelling).
    #[arg(long = "out", alias = "keep", value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Write the HTML page: the real run's lanes (drawn from the recorded history) beside
    /// the model's diagram of the same scenario, with the agreement table.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Seconds the checks of the recorded history may take together; past them a check
    /// says unknown (exit 3).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = crate::commands::check_history::parse_timeout)]
    timeout: Duration,
    /// Megabytes each linearizability search of the history may use; past them a check
    /// says unknown (exit 3).
    #[arg(long, value_name = "MB", default_value = "1024", value_parser = crate::commands::check_history::parse_megabytes)]
    memory: usize,
    /// The server an `inventory-*` row runs on (default: mariadb).
    #[arg(long, value_name = "SERVER", value_parser = inventory_backends())]
    backend: Option<String>,
    /// Seconds an external client (`--client`) may take to answer a request before the
    /// request counts as unknown (`info`).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    client_timeout: Option<Duration>,
    /// `random` or `random:KIND,…` (pause, crash, partition, drop; jump, kill,
    /// reaper-dies, failover, restart, split): instead of the row's planned faults, the row's faults its model
    /// knows and its servers take, at random times drawn from `--seed` over
    /// `--duration` (default 60 s), held against the model with the same faults; a
    /// violation is shrunk to a smallest schedule that still breaks.
    #[arg(long, value_name = "SPEC", value_parser = parse_nemesis)]
    nemesis: Option<RandomNemesis>,
    /// Replays the shrinker may make after a random nemesis's violation (0: none).
    #[arg(long, value_name = "N", default_value_t = locklab_jepsen::random::DEFAULT_SHRINK_RUNS, requires = "nemesis")]
    shrink_runs: u32,
    /// Where the servers live: `hosts` (each in a network namespace of its own, with
    /// its own address: needs root, `ip` and `nft`), `loopback` (all on 127.0.0.1:
    /// the rows that cut servers apart cannot run), `auto` (hosts where they can be
    /// made, else loopback).
    #[arg(long, value_name = "WHERE", default_value = "auto", value_parser = net_values())]
    net: locklab_jepsen::Net,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// A protocol file (see `locklab check --protocol`): its steps run as the lock, and
    /// the history is held against the model of that protocol in this scenario.
    #[arg(long, value_name = "FILE", conflicts_with = "client")]
    protocol: Option<PathBuf>,
    /// Your own lock client: a program speaking locklab's external-client protocol
    /// (jepsen-like/CLIENT-PROTOCOL.md), started once per simulated client instead of
    /// the scenario's lock. Everything after `--client` is the program and its
    /// arguments, so it comes last.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "CMD")]
    client: Vec<String>,
}

/// `--backend`: the servers an inventory row runs on, named as the harness names them.
#[cfg(feature = "sql")]
fn inventory_backends() -> clap::builder::ValueParser {
    use locklab_jepsen::sql::inventory::Backend;
    clap::builder::PossibleValuesParser::new(Backend::ALL.map(|b| b.history().name())).into()
}

/// `--backend` in a build without the inventory rows: any name, since the run itself
/// says that its row is not built.
#[cfg(not(feature = "sql"))]
fn inventory_backends() -> clap::builder::ValueParser {
    clap::builder::ValueParser::string()
}

/// `--net`: its values listed in help and in the error for a wrong one.
fn net_values() -> impl clap::builder::TypedValueParser<Value = locklab_jepsen::Net> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(locklab_jepsen::Net::ALL)
        // Only the listed values get here, and each parses.
        .map(|s| s.parse::<locklab_jepsen::Net>().unwrap_or_default())
}

/// `--nemesis`.
fn parse_nemesis(s: &str) -> Result<RandomNemesis, String> {
    RandomNemesis::parse(s)
}

/// Parses a positive number of seconds, at most 600.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("expected seconds, got {s:?}"))?;
    if !(secs.is_finite() && secs > 0.0 && secs <= 600.0) {
        return Err(format!("expected seconds in (0, 600], got {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The lock of `--client CMD…`, its program checked before any server starts.
pub fn external_client(
    command: Vec<String>,
    reply_timeout: Option<Duration>,
) -> Result<CustomLock, String> {
    let mut client = ExternalClient::new(command).map_err(|e| format!("--client: {e}"))?;
    if let Some(t) = reply_timeout {
        client.reply_timeout = t;
    }
    client
        .check_program()
        .map_err(|e| format!("--client: {e}"))?;
    let name = client.command.join(" ");
    Ok(client.lock(&name))
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    if args.list {
        return list(args.format);
    }
    if let Err(code) = crate::output::writable(args.format, &[("--html", args.html.as_deref())]) {
        return code;
    }
    let Some(id) = args.id.clone() else {
        return bad_input(
            args.format,
            "run: give a scenario id (see `locklab run --list`)",
        );
    };
    let described = match &args.protocol {
        None => None,
        Some(file) => match locklab_models::protocol::load(file) {
            Ok(d) => Some(d),
            Err(e) => return bad_input(args.format, &e.to_string()),
        },
    };
    let lock = if let Some(d) = &described {
        match locklab_jepsen::registry::protocol_lock(d) {
            Ok(lock) => Some(lock),
            Err(e) => return error(args.format, ErrorKind::of_run(&e), &e.to_string()),
        }
    } else if args.client.is_empty() {
        if args.client_timeout.is_some() {
            return bad_input(args.format, "--client-timeout needs --client");
        }
        None
    } else {
        match external_client(args.client.clone(), args.client_timeout) {
            Ok(c) => Some(c),
            Err(e) => return bad_input(args.format, &e),
        }
    };
    crate::commands::interrupt::install("every server and client process was stopped");
    let options = RunOptions {
        lock,
        protocol: described,
        id,
        clients: args.clients,
        replicas: args.replicas,
        duration: args.duration,
        seed: args.seed,
        backend: args.backend.clone(),
        keep: args.keep.clone(),
        html: args.html.is_some(),
        net: args.net,
        random: args.nemesis.clone().map(|n| RandomNemesis {
            shrink_runs: args.shrink_runs,
            ..n
        }),
        check_budget: CheckBudget {
            timeout: args.timeout,
            memory: args.memory,
        },
        ..RunOptions::new("")
    };
    let bar = spinner(args.format, "starting servers");
    let result = run_scenario(&options, &mut |p| match p {
        Progress::Starting(n) if n > 1 => {
            bar.set_message(format!("starting servers (attempt {n})"))
        }
        Progress::Starting(_) => bar.set_message("starting servers"),
        Progress::Running {
            elapsed,
            total,
            events,
        } => bar.set_message(format!(
            "running {:.1}/{:.1} s, {events} events",
            elapsed.as_secs_f64(),
            total.as_secs_f64()
        )),
        Progress::Checking => bar.set_message("checking the history"),
        Progress::Retrying(why) => bar.println(format!("environment unreliable, retrying: {why}")),
        Progress::Shrinking {
            replay,
            budget,
            faults,
        } => bar.set_message(format!(
            "shrinking: replay {replay}/{budget} with {faults} fault(s)"
        )),
    });
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(RunError::Unknown(why)) => {
            match args.format {
                Format::Json => crate::output::print_json(&crate::documents::Failure {
                    verdict: crate::documents::NoAnswer::Unknown,
                    error_kind: None,
                    error: &why,
                    file: None,
                    line: None,
                }),
                Format::Text => eprintln!("unknown: {why}"),
            }
            return crate::output::UNKNOWN;
        }
        Err(e) => return error(args.format, ErrorKind::of_run(&e), &e.to_string()),
    };
    if let Some(path) = &args.html {
        match crate::commands::pages::write_run_pages(path, &report, args.replicas) {
            Ok(pages) => pages
                .iter()
                .for_each(|p| crate::output::wrote(args.format, p)),
            Err(e) => return bad_input(args.format, &e),
        }
    }
    if let Err(code) = emit(args.format, None, &report, || text(&report)) {
        return code;
    }
    report.agreement.verdict.exit_code() as u8
}

/// What an inventory row's run does (it has no fault).
const INVENTORY_STORY: &str =
    "no fault: N buyers, one unit each, against N-1 units (--backend mariadb|postgres)";

fn list(format: Format) -> u8 {
    let plans = locklab_jepsen::runnable();
    match format {
        Format::Json => {
            use crate::documents::RunnableRow;
            let scenarios = plans
                .iter()
                .map(|p| RunnableRow {
                    id: p.id,
                    faults: p.story,
                })
                .chain(
                    locklab_jepsen::registry::inventory_ids().map(|id| RunnableRow {
                        id,
                        faults: INVENTORY_STORY,
                    }),
                )
                .collect();
            crate::output::print_json(&crate::documents::Runnable { scenarios });
        }
        Format::Text => {
            for p in plans {
                println!("{:<26} {}", p.id, p.story);
            }
            for id in locklab_jepsen::registry::inventory_ids() {
                println!("{id:<26} {INVENTORY_STORY}");
            }
        }
    }
    0
}

fn text(r: &RunReport) -> String {
    let mut out = format!(
        "{} on real servers (seed {}, {} clients, {} events, {:.1} s)\n  servers: {}\n  lock:    {}\n  faults:  {}\n",
        r.id,
        r.seed,
        r.clients,
        r.events,
        r.wall_ms as f64 / 1000.0,
        r.topology,
        r.lock,
        r.story
    );
    if let Some(why) = &r.beyond_model {
        out.push_str(&format!("  beyond the model: {why}\n"));
    }
    if let Some(w) = &r.jepsen_workload {
        out.push_str(&format!(
            "  jepsen:  {w} (the Jepsen workload this run reproduces)\n"
        ));
    }
    for u in &r.unreliable {
        out.push_str(&format!(
            "  discarded (environment unreliable, retried): {u}\n"
        ));
    }
    out.push_str(&format!("\nverdict: {}\n", r.agreement.headline()));
    out.push_str(&format!(
        "  at least as safe as the model: {}   agrees with the model: {}\n",
        answer_word(r.agreement.at_least_as_safe),
        answer_word(r.agreement.exact)
    ));
    for row in &r.agreement.rows {
        let observed = row.observed.map_or("not observable in a run", verdict_word);
        let expected = if row.model_violated {
            "violated"
        } else {
            "holds"
        };
        out.push_str(&format!(
            "  {:<22} model: {:<9} run: {:<10} {}\n",
            row.property,
            expected,
            observed,
            row.mark()
        ));
    }
    for why in &r.agreement.unknown_because {
        out.push_str(&format!("  unknown because: {why}\n"));
    }
    for a in &r.agreement.also_found {
        out.push_str(&format!(
            "  also found: {} VIOLATION — {} (not compared with the model for this scenario)\n",
            a.check.name(),
            a.summary
        ));
    }
    if let Some(l) = &r.liveness {
        out.push_str(&format!("  {:<22} {}\n", "after the fault", l.summary));
    }
    if let Some(p) = &r.progress {
        out.push_str(&format!(
            "  {:<22} {} — {}\n",
            "progress vs model",
            answer_word(p.agrees),
            p.summary
        ));
    }
    if let Some(o) = &r.order {
        out.push_str(&format!(
            "  {:<22} {} — {}\n",
            "grant order vs model",
            answer_word(o.agrees),
            o.summary
        ));
    }
    if let Some(w) = &r.waited {
        out.push_str(&format!("  {:<22} {}\n", "longest wait", w.summary));
    }
    if let Some(s) = &r.starvation {
        out.push_str(&format!(
            "  {:<22} {} — {}\n",
            "starvation vs model",
            answer_word(s.agrees),
            s.summary
        ));
    }
    if !r.client_problems.is_empty() {
        out.push_str(&format!(
            "\nthe client program did {} thing(s) the protocol does not allow (recorded in the history, never a verdict):\n",
            r.client_problems.len()
        ));
        for p in &r.client_problems {
            out.push_str(&format!(
                "  {:>8.3} s  {:<13} {}\n",
                p.time_ns as f64 / 1e9,
                p.problem.name(),
                p.detail
            ));
        }
    }
    out.push('\n');
    out.push_str(&check_text(&r.report));
    if let Some(lines) = &r.timeline {
        out.push_str("\nthe offending window:\n");
        for l in lines {
            out.push_str(&format!("  {l}\n"));
        }
    }
    if let Some(n) = &r.nemesis {
        out.push_str(&nemesis_text(n));
    }
    if let Some(h) = &r.history {
        out.push_str(&format!("\nhistory: {}\n", h.display()));
    }
    out
}

/// A random nemesis's part of the report: what it drew, what was active where the
/// history broke, and the shrunk schedule as a plan.
fn nemesis_text(n: &NemesisReport) -> String {
    let mut out = format!(
        "\nrandom nemesis: {} fault(s) of {}; held against the model with faults={}\n",
        n.faults,
        n.kinds.join(", "),
        n.model_faults
    );
    if n.broken.is_empty() {
        out.push_str("  found: no violation of what the lock promises in this row\n");
    } else {
        out.push_str(&format!("  found: {} VIOLATION\n", n.broken.join(", ")));
    }
    for u in &n.unfired {
        out.push_str(&format!("  not taken: {u}\n"));
    }
    if !n.active.is_empty() {
        out.push_str("  active in the offending window:\n");
        for a in &n.active {
            out.push_str(&format!("    {a}\n"));
        }
    }
    if let Some(s) = &n.shrunk {
        if s.reproduced {
            out.push_str(&format!(
                "  shrunk from {} fault(s) ({} taken before the violation) to {} in {} replay(s); this schedule broke again ({}), {:.1} s, replay seed {}:\n",
                n.faults,
                s.from_faults,
                s.plan.len(),
                s.replays,
                s.violated.join(", "),
                s.duration_ms as f64 / 1000.0,
                s.seed.map_or("?".to_string(), |x| x.to_string())
            ));
            if s.plan.is_empty() {
                out.push_str("    (no fault: the lock breaks on its own)\n");
            }
            for line in &s.plan {
                out.push_str(&format!("    {line}\n"));
            }
        } else {
            out.push_str(&format!(
                "  not shrunk: the violation did not come back in {} replay(s) of the {} fault(s) taken before it\n",
                s.replays, s.from_faults
            ));
        }
    }
    out
}
