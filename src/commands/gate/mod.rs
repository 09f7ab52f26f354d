//! `locklab gate CONFIG`: a user's lock client (any program speaking the external-client
//! protocol) through the scenarios a config file names, each judged against what the
//! config requires of it. Writes JUnit XML for CI dashboards, a run page per scenario
//! with an index over them, and exits 0 when every requirement holds, 1 when one is
//! broken, 2 on a bad config, 3 when some answer is unknown (a run that tested nothing
//! included), 4 when a scenario could not run (a server, a port, a client that died
//! before `init`: retry the job, the config is fine).

pub mod config;
pub mod junit;
pub mod verdict;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use locklab_jepsen::agreement::Agreement;
use locklab_jepsen::external::ClientProblem;
use locklab_jepsen::random::NemesisReport;
use locklab_jepsen::{run as run_scenario, CheckBudget, Progress, RunOptions};
use locklab_traces::escape::escape;
use serde::Serialize;

use self::config::Config;

/// Seeds between two random rounds of a scenario: a run's retries take the seeds just
/// after its own, so rounds stay apart.
const ROUND_SEEDS: u64 = 1_000;
use self::verdict::{judge, Judged, Result};
use crate::bad_input;
use crate::commands::check_history::verdict_word;
use crate::output::{emit, spinner, Format};

/// Arguments of `gate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The config file (TOML): the client command, the scenarios, what must hold in each.
    config: PathBuf,
    /// Directory for the reports: `junit.xml`, `index.html`, a page and a directory
    /// (history, client logs) per scenario.
    #[arg(long, value_name = "DIR", default_value = "locklab-gate")]
    out: PathBuf,
    /// Where to write the JUnit XML (default: OUT/junit.xml).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// One scenario's run and its requirements.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ScenarioOutcome {
    /// The catalog id.
    pub id: String,
    /// The seed it ran with (random rounds: one per round).
    pub seed: u64,
    /// What a random nemesis did, and the schedule its shrinker saw break.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<NemesisReport>,
    /// The client command it ran with.
    pub command: Vec<String>,
    /// The run's wall time (ms).
    pub wall_ms: u64,
    /// The recorded history.
    pub history: Option<PathBuf>,
    /// The run's page.
    pub page: Option<PathBuf>,
    /// The run against the model.
    pub agreement: Option<Agreement>,
    /// What the client did wrong.
    pub client_problems: Vec<ClientProblem>,
    /// Why it could not run.
    pub error: Option<String>,
    /// What kind of problem stopped it (`environment`, `internal`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::output::ErrorKind>,
    /// Each requirement, judged.
    pub requirements: Vec<Judged>,
}

/// The whole gate, for `--format json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct GateReport {
    /// The config file.
    config: PathBuf,
    /// The gate's name in its config.
    name: String,
    /// The worst requirement's verdict: `ok`, `violation`, `error` or `unknown`.
    verdict: Result,
    /// The exit code it gives.
    exit_code: u8,
    /// The JUnit XML written.
    junit: PathBuf,
    /// The HTML summary written.
    html: PathBuf,
    /// Each scenario's outcome.
    scenarios: Vec<ScenarioOutcome>,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    // A config that does not read or makes no sense is an input error, as a history is.
    let config = match config::load(&args.config) {
        Ok(c) => c,
        Err(e) => return crate::output::error(args.format, crate::output::ErrorKind::Input, &e),
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return bad_input(args.format, &format!("--out {}: {e}", args.out.display()));
    }
    let junit_path = args
        .junit
        .clone()
        .unwrap_or_else(|| args.out.join("junit.xml"));
    crate::commands::interrupt::install("every server and client process was stopped");
    let bar = spinner(args.format, "starting");
    // A scenario with random rounds runs once per round, each round its own seed and
    // its own outcome.
    let runs: Vec<(usize, &config::Scenario, Option<u32>)> = config
        .scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let rounds = (s.nemesis.is_some()).then_some(s.rounds);
            (0..s.rounds).map(move |r| (i, s, rounds.map(|_| r)))
        })
        .collect();
    let total = runs.len();
    let mut outcomes = Vec::new();
    for (n, (i, s, round)) in runs.into_iter().enumerate() {
        let (stem, seed) = match round {
            Some(r) => (
                format!("{:02}-{}-round{}", i + 1, s.id, r + 1),
                config.seed.wrapping_add(u64::from(r) * ROUND_SEEDS),
            ),
            None => (format!("{:02}-{}", i + 1, s.id), config.seed),
        };
        let label = format!("[{}/{total}] {}", n + 1, s.id);
        bar.set_message(format!("{label}: starting servers"));
        let outcome = run_one(&config, s, &args.out, &stem, seed, &mut |p| match p {
            Progress::Running { elapsed, total, .. } => bar.set_message(format!(
                "{label}: running {:.1}/{:.1} s",
                elapsed.as_secs_f64(),
                total.as_secs_f64()
            )),
            Progress::Checking => bar.set_message(format!("{label}: checking the history")),
            Progress::Retrying(why) => {
                bar.println(format!("{label}: environment unreliable, retrying: {why}"))
            }
            Progress::Shrinking { replay, budget, .. } => {
                bar.set_message(format!("{label}: shrinking, replay {replay}/{budget}"))
            }
            Progress::Starting(_) => {}
        });
        if args.format == Format::Text {
            // Each scenario's lines as it ends, on stdout (the spinner is on stderr).
            bar.suspend(|| println!("{}", line_for(&outcome)));
        }
        outcomes.push(outcome);
    }
    bar.finish_and_clear();
    let verdict = outcomes
        .iter()
        .flat_map(|o| &o.requirements)
        .map(|j| j.result)
        .max()
        .unwrap_or(Result::Pass);
    let exit_code = match verdict {
        Result::Pass => crate::output::HOLDS,
        Result::Fail => crate::output::VIOLATED,
        Result::Unknown => crate::output::UNKNOWN,
        Result::Error => crate::output::COULD_NOT_RUN,
    };
    if let Err(e) = std::fs::write(&junit_path, junit::document(&config.name, &outcomes)) {
        return bad_input(
            args.format,
            &format!("--junit {}: {e}", junit_path.display()),
        );
    }
    let index = args.out.join("index.html");
    if let Err(e) = std::fs::write(&index, index_page(&config, &outcomes)) {
        return bad_input(args.format, &format!("{}: {e}", index.display()));
    }
    let report = GateReport {
        config: args.config.clone(),
        name: config.name.clone(),
        verdict,
        exit_code,
        junit: junit_path,
        html: index,
        scenarios: outcomes,
    };
    if let Err(code) = emit(args.format, None, &report, || text(&report)) {
        return code;
    }
    exit_code
}

fn run_one(
    config: &Config,
    s: &config::Scenario,
    out: &Path,
    stem: &str,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> ScenarioOutcome {
    let keep = out.join(stem);
    // A history left by an earlier gate would be appended to, not replaced.
    let _ = std::fs::remove_dir_all(&keep);
    let options = RunOptions {
        clients: config.clients,
        duration: config.duration,
        seed,
        keep: Some(keep),
        random: s.nemesis.clone(),
        html: true,
        lock: Some(s.client.clone().lock(&config.name)),
        check_budget: CheckBudget {
            timeout: config.check_timeout,
            ..CheckBudget::default()
        },
        ..RunOptions::new(&s.id)
    };
    let mut outcome = ScenarioOutcome {
        id: s.id.clone(),
        seed,
        nemesis: None,
        command: s.client.command.clone(),
        wall_ms: 0,
        history: None,
        page: None,
        agreement: None,
        client_problems: Vec::new(),
        error: None,
        error_kind: None,
        requirements: Vec::new(),
    };
    let report = match run_scenario(&options, progress) {
        Ok(r) => r,
        Err(e) => {
            // Whatever stopped the run (a server, a port, a client that died before
            // `init`, a machine that spoiled every attempt), the config was checked
            // before: the scenario could not run.
            let result = Result::Error;
            let why = e.to_string();
            outcome.error_kind = Some(crate::output::ErrorKind::of_run(&e));
            outcome.requirements = s
                .require
                .iter()
                .map(|&requirement| Judged {
                    requirement,
                    result,
                    summary: format!("the scenario did not run: {why}"),
                    details: format!("scenario {}: the scenario did not run: {why}\n", s.id),
                    also_found: Vec::new(),
                })
                .collect();
            outcome.error = Some(why);
            return outcome;
        }
    };
    let history = report
        .history
        .as_ref()
        .map_or_else(|| "history".to_string(), |h| h.display().to_string());
    outcome.requirements = s
        .require
        .iter()
        .map(|&r| judge(&s.id, r, &report, &history))
        .collect();
    let page = out.join(format!("{stem}.html"));
    match crate::commands::pages::write_run_pages(&page, &report, None) {
        Ok(_) => outcome.page = Some(page),
        Err(e) => outcome.error = Some(format!("the run's page: {e}")),
    }
    outcome.wall_ms = report.wall_ms;
    outcome.history = report.history.clone();
    outcome.client_problems = report.client_problems.clone();
    outcome.agreement = Some(report.agreement);
    outcome.nemesis = report.nemesis;
    outcome
}

fn word(r: Result) -> &'static str {
    match r {
        Result::Pass => "pass",
        Result::Fail => "FAIL",
        Result::Unknown => "unknown",
        Result::Error => "ERROR",
    }
}

fn line_for(o: &ScenarioOutcome) -> String {
    let mut t = String::new();
    for j in &o.requirements {
        let _ = writeln!(
            t,
            "  {:<24} {:<26} {:<8} {}",
            o.id,
            j.requirement.name(),
            word(j.result),
            j.summary
        );
        for a in &j.also_found {
            let _ = writeln!(t, "  {:<24} {:<26} {:<8} also found: {a}", "", "", "");
        }
    }
    if let Some(s) = o.nemesis.as_ref().and_then(|n| n.shrunk.as_ref()) {
        if s.reproduced {
            let _ = writeln!(
                t,
                "  {:<24} random nemesis (seed {}): smallest schedule that broke again, {} fault(s):",
                "",
                o.seed,
                s.plan.len()
            );
            for line in &s.plan {
                let _ = writeln!(t, "  {:<24}   {line}", "");
            }
        }
    }
    if !o.client_problems.is_empty() {
        let _ = writeln!(
            t,
            "  {:<24} the client broke the protocol {} time(s) (see the run page)",
            "",
            o.client_problems.len()
        );
    }
    t.trim_end().to_string()
}

fn text(r: &GateReport) -> String {
    let all: Vec<&Judged> = r.scenarios.iter().flat_map(|s| &s.requirements).collect();
    let passed = all.iter().filter(|j| j.result == Result::Pass).count();
    let mut t = format!(
        "\nlocklab gate {} ({}): {passed} of {} requirement(s) hold — {}\n",
        r.config.display(),
        r.name,
        all.len(),
        match r.verdict {
            Result::Pass => "PASS",
            Result::Fail => "FAIL",
            Result::Unknown => "UNKNOWN (no answer: a budget ran out, or a run tested nothing)",
            Result::Error => "ERROR (a scenario could not run: retry, the config is fine)",
        }
    );
    for j in all.iter().filter(|j| j.result != Result::Pass) {
        t.push('\n');
        t.push_str(&j.details);
    }
    let _ = writeln!(
        t,
        "\njunit: {}\nhtml:  {}",
        r.junit.display(),
        r.html.display()
    );
    t
}

/// The gate's index: every requirement's outcome, linked to its run's page.
fn index_page(config: &Config, outcomes: &[ScenarioOutcome]) -> String {
    let mut body = format!(
        "<h1>locklab gate — {}</h1><p class=\"lesson\">Each scenario ran this lock client on real servers under the scenario's faults; its history was checked and held against the model. A page per run draws its lanes beside the model's diagram.</p>\
<table class=\"cat\"><thead><tr><th>scenario</th><th>requirement</th><th>result</th><th>what the run showed</th><th>run</th></tr></thead><tbody>",
        escape(&config.name)
    );
    for o in outcomes {
        let verdict = o.agreement.as_ref().map_or("did not run".to_string(), |a| {
            verdict_word(a.verdict).to_string()
        });
        let link = o.page.as_ref().and_then(|p| p.file_name()).map_or_else(
            || escape(&verdict),
            |f| {
                format!(
                    "<a href=\"{}\">{}</a>",
                    escape(&f.to_string_lossy()),
                    escape(&verdict)
                )
            },
        );
        for j in &o.requirements {
            let _ =
                write!(
                body,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{link}</td></tr>",
                escape(&o.id),
                escape(j.requirement.name()),
                if j.result == Result::Pass { "ok" } else { "bad" },
                word(j.result),
                escape(&j.summary),
            );
        }
    }
    body.push_str("</tbody></table>");
    locklab_traces::diagram::page::document(&format!("locklab gate — {}", config.name), &body)
}
