//! `locklab check ID`: model-check one scenario and print the verdict with the shortest
//! story of every violated property.

use locklab_models::catalog::{self, Expected, Overrides, Report, Story, Verdict};
use locklab_models::check::{default_threads, Limits, Store, DEFAULT_MAX_BYTES};
use locklab_models::progress::{self, Kept};
use locklab_models::registry::Verdict as Word;

use crate::bad_input;
use crate::output::{self, joined, spinner, Format};

/// Bounds shared by `check`, `explain` and `explore`.
#[derive(clap::Args, Debug, Clone)]
pub struct Bounds {
    /// Number of clients.
    #[arg(long, value_name = "N", help_heading = "Bounds (the model's size)")]
    pub clients: Option<usize>,
    /// Replicas behind the master (failover scenarios).
    #[arg(long, value_name = "N", help_heading = "Bounds (the model's size)")]
    pub replicas: Option<usize>,
    /// Redlock nodes.
    #[arg(long, value_name = "N", help_heading = "Bounds (the model's size)")]
    pub nodes: Option<usize>,
    /// Lease in ticks.
    #[arg(long, value_name = "TICKS", help_heading = "Bounds (the model's size)")]
    pub ttl: Option<u64>,
    /// Fault budgets, e.g. `pause=1,failover=1`, or `none`.
    #[arg(
        long,
        value_name = "KIND=N,..",
        help_heading = "Bounds (the model's size)"
    )]
    pub faults: Option<String>,
}

impl Bounds {
    /// As the catalog's overrides.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            clients: self.clients,
            replicas: self.replicas,
            nodes: self.nodes,
            ttl: self.ttl,
            faults: self.faults.clone(),
            once: false,
        }
    }
}

/// Arguments of `check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario id (see `locklab models`). With `--protocol`: the environment to check
    /// the protocol in (Redis: none, pause, crash, failover; Redlock: none, restart,
    /// delayed-restart, clock-jump, pause; etcd: none, pause, crash, partition,
    /// failover, drop; or a catalog row of its family; default: every environment).
    #[arg(required_unless_present = "protocol")]
    id: Option<String>,
    /// A protocol file (TOML: the family, the steps of acquire/release/renew as Redis
    /// commands or Lua scripts, or as etcd requests, what each reply means) to
    /// model-check instead of a catalog row.
    #[arg(long, value_name = "FILE")]
    protocol: Option<std::path::PathBuf>,
    #[command(flatten)]
    bounds: Bounds,
    /// Stop after this many distinct states (verdict unknown, exit 3).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_states, help_heading = "Search")]
    max_states: usize,
    /// Stop after this many seconds (verdict unknown, exit 3).
    #[arg(long, value_name = "SECS", value_parser = crate::commands::check_history::parse_timeout, help_heading = "Search")]
    timeout: Option<std::time::Duration>,
    /// Stop when the search's memory has grown by this many MB (verdict unknown, exit 3).
    #[arg(long, value_name = "MB", default_value_t = (DEFAULT_MAX_BYTES >> 20) as u64, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Search")]
    memory: u64,
    /// Threads generating successors (default: every core, up to 8). The verdict and
    /// the story do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64), help_heading = "Search")]
    threads: Option<u64>,
    /// Count states that differ only by a permutation of interchangeable clients or
    /// nodes, or in values no step reads again, apart (slower; the verdict and the
    /// story's length stay the same).
    #[arg(long, help_heading = "Search")]
    no_symmetry: bool,
    /// How visited states are stored. `full` (the default): exact verdicts. For
    /// state spaces past `--memory`: `hash-compact` stores 64-bit fingerprints (about
    /// half the memory per state, stories still shortest) and `bitstate` sets three
    /// bits per state in a fixed array, depth first (the least memory, stories not
    /// always shortest). Either proves a violation it finds, but never "holds": a
    /// search with none found is unknown (exit 3), with the chance it missed one.
    #[arg(long, value_enum, default_value_t = StoreArg::Full, help_heading = "Search")]
    store: StoreArg,
    /// Stop at the first violation found, of any property, as Spin and TLC do: its
    /// story is as short as without the flag, and the properties not yet violated are
    /// then unknown. Without it the search goes on until every property has its story
    /// or the space is explored.
    #[arg(long, help_heading = "Search")]
    stop_at_first: bool,
    /// With `--store bitstate`: the array holds 2^N bits (30: 128 MB).
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(10..=38), help_heading = "Search")]
    bitstate_bits: u32,
    /// Also write the story as a self-contained HTML page (sequence diagram).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    html: Option<std::path::PathBuf>,
    /// Also judge the progress promises under weak fairness — eventually-free (after a
    /// fault, the lock is granted again) and starvation-free (a client that
    /// keeps asking is granted) — each broken one told as a lasso. A broken promise
    /// exits 1 like a broken safety property; an undecided one 3.
    #[arg(long, help_heading = "Progress")]
    progress: bool,
    /// With `--progress`: judge starvation-freedom with clients that lock once (each
    /// client's one request granted in the end), on the graph eventually-free is judged
    /// on, rather than with clients that lock again and again. What a model checker
    /// whose model has one-shot clients (Spin's, in `benches/spin/`) checks.
    #[arg(long, requires = "progress", help_heading = "Progress")]
    once: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text, help_heading = "Output")]
    format: Format,
}

/// `--store`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreArg {
    /// Exact.
    Full,
    /// 64-bit fingerprints.
    HashCompact,
    /// A bit array, depth first.
    Bitstate,
}

/// Runs the search with a spinner; the catalog's error becomes exit 2.
pub fn run_report(id: &str, bounds: &Bounds, limits: Limits, format: Format) -> Result<Report, u8> {
    let bar = spinner(format, &format!("checking {id}"));
    let result = catalog::find(id).and_then(|row| {
        catalog::check(row, &bounds.overrides(), limits, &mut |s| {
            bar.set_message(format!(
                "checking {id}: {} states ({} generated, {:.0}/s), depth {}, queue {}",
                s.unique_states,
                s.states,
                s.states_per_second(),
                s.max_depth,
                s.queue
            ));
        })
    });
    bar.finish_and_clear();
    result.map_err(|e| bad_input(format, &e.to_string()))
}

/// The exit code of a verdict.
pub fn exit_code(v: &Verdict) -> u8 {
    match v {
        Verdict::Holds => output::HOLDS,
        Verdict::Violated(_) => output::VIOLATED,
        Verdict::Unknown => output::UNKNOWN,
    }
}

/// A story as text.
pub fn story_text(s: &Story) -> String {
    s.to_string()
}

/// The verdict line.
pub fn verdict_text(r: &Report) -> String {
    verdict_text_with(r, true)
}

/// The verdict line, with the catalog's expectation when `with_expected` (a user's protocol
/// has none).
pub fn verdict_text_with(r: &Report, with_expected: bool) -> String {
    let p = &r.params;
    let bounds = format!(
        "clients={} replicas={} nodes={} ttl={} faults=[{}]",
        p.clients,
        p.replicas,
        p.nodes,
        p.ttl,
        p.faults
            .iter()
            .map(|(n, b)| format!("{n}={b}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let v = match &r.verdict {
        Verdict::Holds => "HOLDS: no violation within the stated bounds".to_string(),
        Verdict::Violated(ps) => match r.stopped_by {
            // The found paths prove their properties; the rest were not searched through.
            Some(stop) => format!(
                "VIOLATED: {} ({}: any other property is unknown)",
                joined(ps, ", "),
                stop.phrase()
            ),
            None if r.store.exact() => format!("VIOLATED: {}", joined(ps, ", ")),
            None => format!(
                "VIOLATED: {} (each story replayed through the model's steps; in a {} store any other property is unknown{})",
                joined(ps, ", "),
                r.store.name(),
                if matches!(r.store, Store::Bitstate { .. }) {
                    ", and a story found depth first is not always the shortest"
                } else {
                    ""
                }
            ),
        },
        Verdict::Unknown => match (r.stopped_by, r.store) {
            (Some(stop), _) => format!(
                "UNKNOWN: {} before an answer{}",
                stop.phrase(),
                stop.advice()
            ),
            (None, Store::Full) => {
                "UNKNOWN: a limit stopped the search before an answer".to_string()
            }
            (None, store) => format!("UNKNOWN: {}", missed_text(r, store)),
        },
    };
    let expected = locklab_traces::diagram::model::expected_text(r.expected);
    let explored = format!(
        "explored {} states ({} distinct, depth {}) in {:.2}s",
        r.stats.states, r.stats.unique_states, r.stats.max_depth, r.stats.seconds
    );
    if !with_expected {
        return format!("{}: {v}\n  bounds: {bounds}\n  {explored}\n", r.id);
    }
    format!(
        "{}: {v}\n  bounds: {bounds}\n  {explored}; expected at default bounds: {expected} ({})\n",
        r.id,
        agreement_word(r)
    )
}

/// How the verdict stands to the catalog's expectation. An undecided search has not
/// differed from it; one stopped early (Ctrl-C, `--stop-at-first`) is compared on the
/// properties it decided.
fn agreement_word(r: &Report) -> &'static str {
    match (&r.verdict, r.expected) {
        _ if r.matches_expected => "matches",
        (Verdict::Unknown, _) => "not decided",
        (Verdict::Violated(found), Expected::Violates(expected))
            if r.stopped_by.is_some() && found.iter().all(|p| expected.contains(p)) =>
        {
            "matches so far"
        }
        _ => "differs",
    }
}

/// What an inexact store's complete search says: no violation in the states it saw,
/// and how likely it is to have missed one.
fn missed_text(r: &Report, store: Store) -> String {
    let n = r.stats.unique_states;
    match (store, r.collision_bound) {
        (Store::Bitstate { log2_bits }, _) => format!(
            "no violation in {n} states swept ({}; {:.1} bits per state): a state whose bits others had set was skipped with what only it leads to, so this is not a proof",
            store.name(),
            (1u64 << log2_bits) as f64 / n.max(1) as f64
        ),
        (_, Some(p)) => format!(
            "no violation in {n} states ({}); a fingerprint collision could have hidden one, probability ≤ {p:.1e}",
            store.name()
        ),
        (_, None) => format!("no violation in {n} states ({})", store.name()),
    }
}

/// The search's limits from the command line.
fn limits(args: &Args) -> Limits {
    Limits {
        max_states: args.max_states,
        timeout: args.timeout,
        max_bytes: usize::try_from(args.memory)
            .ok()
            .and_then(|mb| mb.checked_mul(1 << 20)),
        threads: args.threads.map_or_else(default_threads, |t| t as usize),
        symmetry: !args.no_symmetry,
        store: match args.store {
            StoreArg::Full => Store::Full,
            StoreArg::HashCompact => Store::HashCompact,
            StoreArg::Bitstate => Store::Bitstate {
                log2_bits: args.bitstate_bits,
            },
        },
        stop_at_first: args.stop_at_first,
    }
}

/// What `check --protocol FILE [ENV]` asks for, if it does (`Err`: the exit code of
/// flags that do not go with it).
pub fn protocol_request(args: &Args) -> Option<Result<ProtocolRequest<'_>, u8>> {
    let file = args.protocol.as_deref()?;
    if let Err(code) = crate::output::writable(args.format, &[("--html", args.html.as_deref())]) {
        return Some(Err(code));
    }
    Some(Ok(ProtocolRequest {
        file,
        env: args.id.as_deref(),
        bounds: &args.bounds,
        limits: limits(args),
        progress: args.progress,
        once: args.once,
        html: args.html.as_deref(),
        format: args.format,
    }))
}

/// A protocol file to check, as the command line gives it.
pub struct ProtocolRequest<'a> {
    /// The protocol file.
    pub file: &'a std::path::Path,
    /// The environment or catalog row (`None`: every environment).
    pub env: Option<&'a str>,
    /// `--clients`, `--replicas`, `--nodes`, `--ttl` and `--faults`, applied as overrides
    /// in every environment checked; those not given keep each environment's own.
    pub bounds: &'a Bounds,
    /// The search's limits.
    pub limits: Limits,
    /// Also judge the progress promises in each environment.
    pub progress: bool,
    /// With `progress`, starvation with clients that lock once.
    pub once: bool,
    /// Also draw each environment's page: at this path for one environment, beside it
    /// with the environment's name for several (`out.html` → `out-pause.html`).
    pub html: Option<&'a std::path::Path>,
    /// The output format.
    pub format: Format,
}

/// Runs the command (a catalog row; see [`protocol_request`] for a protocol file);
/// returns the exit code.
pub fn run(args: Args) -> u8 {
    if let Err(code) = crate::output::writable(args.format, &[("--html", args.html.as_deref())]) {
        return code;
    }
    let limits = limits(&args);
    let id = args.id.as_deref().unwrap_or_default();
    let report = match run_report(id, &args.bounds, limits, args.format) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let progress = if args.progress {
        match progress_verdicts(id, &args.bounds, args.once, limits, args.format) {
            Ok(p) => Some(p),
            Err(code) => return code,
        }
    } else {
        None
    };
    if let Some(path) = &args.html {
        let o = args.bounds.overrides();
        if let Err(code) = crate::commands::pages::write_model_page(
            args.format,
            path,
            &report,
            &o,
            progress.as_deref(),
        ) {
            return code;
        }
    }
    match args.format {
        Format::Json => output::print_json(&crate::documents::Checked::new(
            &report,
            progress.as_deref(),
        )),
        Format::Text => {
            print!(
                "{}",
                output::paint(&headline(&report, progress.as_deref(), true))
            );
            for s in &report.stories {
                print!("\n{}", story_text(s));
            }
            if let Some(p) = &progress {
                print!("{}", progress_text(p));
            }
        }
    }
    report.answer(progress.as_deref()).exit_code() as u8
}

/// The progress promises' verdicts on row `id`, with a spinner; a family that does not
/// state them yet is exit 2 (the flag asks for what cannot be given).
fn progress_verdicts(
    id: &str,
    bounds: &Bounds,
    once: bool,
    limits: Limits,
    format: Format,
) -> Result<Vec<progress::Verdict>, u8> {
    let bar = spinner(format, &format!("judging progress of {id}"));
    let o = Overrides {
        once,
        ..bounds.overrides()
    };
    let result = catalog::find(id).and_then(|row| catalog::progress(row, &o, limits));
    bar.finish_and_clear();
    match result {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(bad_input(
            format,
            &format!(
                "--progress: the {id} row's family does not state progress promises (the lock families do; the inventory rows have no lock to wait for)"
            ),
        )),
        Err(e) => Err(bad_input(format, &e.to_string())),
    }
}

/// The verdict line of `r` (see [`verdict_text_with`]) led by the answer over every
/// property asked where the promises change it: `VIOLATED: starvation-free
/// (progress); safety HOLDS: …`, never a headline that contradicts the exit code.
pub fn headline(r: &Report, progress: Option<&[progress::Verdict]>, with_expected: bool) -> String {
    let text = verdict_text_with(r, with_expected);
    let overall = r.answer(progress);
    if overall == r.verdict.word() {
        return text;
    }
    let names = |w| joined(&progress::with_word(progress.unwrap_or_default(), w), ", ");
    let lead = match overall {
        Word::Violation => format!("VIOLATED: {} (progress)", names(Word::Violation)),
        Word::Unknown => format!("UNKNOWN: {} undecided (progress)", names(Word::Unknown)),
        Word::Ok => return text,
    };
    text.replacen(
        &format!("{}: ", r.id),
        &format!("{}: {lead}; safety ", r.id),
        1,
    )
}

/// The progress section: one line per promise, then each broken one's lasso.
pub fn progress_text(verdicts: &[progress::Verdict]) -> String {
    let mut out = String::from(
        "\nProgress, under weak fairness of the clock, the servers and each client's own steps:\n",
    );
    // Each client locks once, or (for starvation, where the family's model can) they
    // start over: two graphs, each named once.
    for repeating in [false, true] {
        let on: Vec<&progress::Verdict> = verdicts
            .iter()
            .filter(|v| v.repeating == repeating)
            .collect();
        let Some(g) = on.iter().find_map(|v| v.graph) else {
            continue;
        };
        let clients = if repeating {
            "clients that lock again and again"
        } else {
            "each client locking once"
        };
        let names: Vec<&str> = on.iter().map(|v| v.promise.name()).collect();
        out.push_str(&format!(
            "  {}: judged with {clients}, on a graph of {} states and {} steps in {:.2}s\n",
            names.join(", "),
            g.states,
            g.edges,
            g.seconds
        ));
    }
    for v in verdicts {
        let line = match &v.kept {
            Kept::Holds => "holds".to_string(),
            Kept::Violated { lasso } => format!("VIOLATED: {}", lasso.shape()),
            Kept::Unknown { why } => format!("unknown: {why}"),
        };
        out.push_str(&format!("  {:<16} {line}\n", v.promise.name()));
    }
    for v in verdicts {
        if let Kept::Violated { lasso } = &v.kept {
            out.push_str(&format!("\n{lasso}"));
        }
    }
    out
}
