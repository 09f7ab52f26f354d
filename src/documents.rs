//! Every `--format json` document, as a type: commands print these and nothing else, and
//! `locklab generate schema` derives their JSON Schemas from the same types (schemars),
//! so the contract and the output cannot drift apart. `tests/json_contract.rs` validates
//! each command's output against its schema.
//!
//! One vocabulary throughout: a verdict is `ok`, `violation`, `unknown` (or `error` when
//! the command could not answer); a property is its kebab-case id (`mutual-exclusion`);
//! a violation lists its properties in `violated`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use locklab_models::catalog::Report;
use locklab_models::progress::{self, Kept};
use locklab_models::registry::Verdict;
use locklab_models::scenario::Scenario;
use schemars::JsonSchema;
use serde::Serialize;

/// The shape of every document, as `schema_version` in each: raised when a field changes
/// meaning or goes away (new fields do not raise it).
pub const SCHEMA_VERSION: u32 = 2;

/// A document as printed: its body with the schema version beside it.
#[derive(Serialize, JsonSchema)]
pub struct Document<T> {
    /// The contract's version, [`SCHEMA_VERSION`]: a reader checks it before it reads on.
    pub schema_version: u32,
    /// The command's own fields.
    #[serde(flatten)]
    pub body: T,
}

/// Why a command gave no answer: it failed (`error`), or — a run only — it ran but
/// can give no verdict (`unknown`).
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NoAnswer {
    /// Bad input (exit 2) or a machine that could not run it (exit 4).
    Error,
    /// A run with no model verdict to compare with (exit 3).
    #[cfg_attr(not(feature = "harness"), allow(dead_code))]
    Unknown,
}

/// What kind of problem stopped a command, for `--format json`'s `error_kind` and the
/// exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// A flag, an id, a config file: fix the command (exit 2).
    Usage,
    /// A history or other input file: fix the file (exit 2).
    Input,
    /// The machine: a server, a port, a client program that died (exit 4).
    Environment,
    /// A bug in locklab (exit 4).
    // Only a run meets locklab's own bugs as error values today.
    #[cfg_attr(not(feature = "harness"), allow(dead_code))]
    Internal,
}

/// What every command prints when it stops without its own document.
#[derive(Serialize, JsonSchema)]
pub struct Failure<'a> {
    /// `error`, or `unknown` for a run that could give no verdict.
    pub verdict: NoAnswer,
    /// What kind of problem (absent on `unknown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// The message, naming the flag, file or line at fault.
    pub error: &'a str,
    /// On an input error: the file at fault (`<stdin>` for standard input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<&'a str>,
    /// On an input error: the 1-based line at fault, when one line is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// `locklab models`.
#[derive(Serialize, JsonSchema)]
pub struct Models<'a> {
    /// The catalog, row by row.
    pub scenarios: Vec<ModelRow<'a>>,
}

/// One catalog row in `models`.
#[derive(Serialize, JsonSchema)]
pub struct ModelRow<'a> {
    /// The row.
    #[serde(flatten)]
    pub scenario: &'a Scenario,
    /// With `--progress`: its promises, decided (absent where its family states none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Promises>,
}

/// Each progress promise's verdict by promise id (`eventually-free`, …): the summary
/// `models` and `matrix` show; `check --progress` gives the whole lasso.
pub type Promises = BTreeMap<&'static str, PromiseSummary>;

/// One promise's verdict, summed up.
#[derive(Serialize, JsonSchema)]
pub struct PromiseSummary {
    /// `ok`, `violation` or `unknown`.
    pub verdict: Verdict,
    /// On a violation: the client that waits for ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    /// On a violation: the steps before the cycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stem: Option<usize>,
    /// On a violation: the cycle's steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<usize>,
    /// On `unknown`: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The promises of one row, summed up.
pub fn promises(verdicts: &[progress::Verdict]) -> Promises {
    verdicts
        .iter()
        .map(|v| {
            let summary = match &v.kept {
                Kept::Holds => PromiseSummary {
                    verdict: Verdict::Ok,
                    client: None,
                    stem: None,
                    cycle: None,
                    why: None,
                },
                Kept::Violated { lasso } => PromiseSummary {
                    verdict: Verdict::Violation,
                    client: Some(lasso.client),
                    stem: Some(lasso.stem),
                    cycle: Some(lasso.cycle().len()),
                    why: None,
                },
                Kept::Unknown { why } => PromiseSummary {
                    verdict: Verdict::Unknown,
                    client: None,
                    stem: None,
                    cycle: None,
                    why: Some(why.clone()),
                },
            };
            (v.promise.name(), summary)
        })
        .collect()
}

/// The answer over every property a check asked, flattened into `check`'s and each
/// `check --protocol` environment's document: `verdict` is the one word the headline
/// says and the exit code is (README, "Exit codes").
#[derive(Serialize, JsonSchema)]
pub struct Answer<'a> {
    /// `violation` if the search or a progress promise is violated, else `unknown` if
    /// one is undecided, else `ok`.
    pub verdict: Verdict,
    /// The safety properties with a story in `stories`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub violated: &'a [locklab_models::registry::Property],
    /// With `--progress`: the promises broken, each with its lasso in `progress`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<progress::Promise>,
    /// The safety search's own verdict (with `--progress` it may differ from `verdict`).
    pub safety: &'a locklab_models::catalog::Verdict,
}

impl<'a> Answer<'a> {
    /// The answer of `r` and, when they were judged, its promises.
    pub fn new(r: &'a Report, progress: Option<&[progress::Verdict]>) -> Self {
        Answer {
            verdict: r.answer(progress),
            violated: r.verdict.violated(),
            broken: progress::with_word(progress.unwrap_or_default(), Verdict::Violation),
            safety: &r.verdict,
        }
    }
}

/// A model search's answer as `check` and each `check --protocol` environment print
/// it: what was searched, the answer over every property asked, and the search's own
/// account.
#[derive(Serialize, JsonSchema)]
pub struct Searched<'a> {
    /// The scenario id (with `--protocol`: the protocol's name `@` the environment).
    pub id: &'a str,
    /// The bounds used.
    pub params: &'a locklab_models::scenario::Params,
    /// The answer over every property asked.
    #[serde(flatten)]
    pub answer: Answer<'a>,
    /// The search's counters.
    pub stats: &'a locklab_models::check::Stats,
    /// The limit that stopped the search before it explored everything, if one did.
    pub stopped_by: Option<locklab_models::check::Stop>,
    /// One shortest story per violated safety property.
    pub stories: &'a [locklab_models::checkable::Story],
    /// How the search stored its states.
    pub store: locklab_models::check::Store,
    /// With a table store, an upper bound on the chance that a fingerprint collision
    /// hid a state from the search; none for a bitstate sweep.
    pub collision_bound: Option<f64>,
    /// With `--progress`: each promise's verdict, with its lasso.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<&'a [progress::Verdict]>,
}

impl<'a> Searched<'a> {
    /// The answer of `r` with its promises when they were judged.
    pub fn new(r: &'a Report, progress: Option<&'a [progress::Verdict]>) -> Self {
        Searched {
            id: r.id,
            params: &r.params,
            answer: Answer::new(r, progress),
            stats: &r.stats,
            stopped_by: r.stopped_by,
            stories: &r.stories,
            store: r.store,
            collision_bound: r.collision_bound,
            progress,
        }
    }
}

/// `locklab check ID`.
#[derive(Serialize, JsonSchema)]
pub struct Checked<'a> {
    /// The search and its answer.
    #[serde(flatten)]
    pub searched: Searched<'a>,
    /// What the catalog expects of the safety search at default bounds.
    pub expected: &'a locklab_models::scenario::Expected,
    /// Whether the safety search's verdict is `expected`.
    pub matches_expected: bool,
}

impl<'a> Checked<'a> {
    /// The document of `r` with its promises when they were judged.
    pub fn new(r: &'a Report, progress: Option<&'a [progress::Verdict]>) -> Self {
        Checked {
            searched: Searched::new(r, progress),
            expected: &r.expected,
            matches_expected: r.matches_expected,
        }
    }
}

/// `locklab check --protocol FILE`.
#[derive(Serialize, JsonSchema)]
pub struct ProtocolChecked<'a> {
    /// The worst answer over every environment (violation, then unknown, then ok).
    pub verdict: Verdict,
    /// The protocol's name.
    pub protocol: &'a str,
    /// The protocol file, as the command line gave it.
    pub file: PathBuf,
    /// One answer per environment checked.
    pub reports: Vec<ProtocolReport<'a>>,
}

/// A user's protocol in one environment: a search's answer without the catalog's
/// expectation (a user's protocol states none of its own).
#[derive(Serialize, JsonSchema)]
pub struct ProtocolReport<'a> {
    /// The search and its answer.
    #[serde(flatten)]
    pub searched: Searched<'a>,
    /// On `unknown`: what to change so that the search can answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<&'static str>,
    /// On `violation`: the properties broken here that the family's sound recipe keeps
    /// in the same environment (`own`), those it breaks too (`shared`), and those its
    /// row does not state (`unmatched`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub particular: Option<locklab_models::protocol::particular::Particular>,
}

/// `locklab explain ID`.
#[derive(Serialize, JsonSchema)]
pub struct Explained<'a> {
    /// The search's answer, as the exit code: `ok`, `violation` or `unknown`.
    pub verdict: Verdict,
    /// The catalog row.
    pub scenario: &'a Scenario,
    /// The search's answer, with its stories.
    pub report: &'a Report,
}

/// The answer of a command that holds rows against the catalog (`matrix`, `report`):
/// unknown when Ctrl-C cut rows short, else whether every row matched.
pub fn catalog_answer(all_match: bool) -> Verdict {
    if locklab_models::check::interrupted() {
        Verdict::Unknown
    } else if all_match {
        Verdict::Ok
    } else {
        Verdict::Violation
    }
}

/// The last line of `matrix`'s and `report`'s text: their answer in words.
pub fn catalog_line(answer: Verdict) -> &'static str {
    match answer {
        Verdict::Ok => "every verdict matches the catalog",
        Verdict::Violation => "SOME VERDICTS DIFFER from the catalog",
        Verdict::Unknown => "INTERRUPTED: the rows it cut short are unknown",
    }
}

/// `locklab matrix`.
#[derive(Serialize, JsonSchema)]
pub struct Matrix {
    /// The answer, as the exit code: `ok` when every row's verdict is the catalog's,
    /// `violation` when one is not, `unknown` when interrupted first.
    pub verdict: Verdict,
    /// Whether every row's verdict is the catalog's.
    pub all_match: bool,
    /// Wall time of the whole matrix.
    pub seconds: f64,
    /// Row by row.
    pub scenarios: Vec<MatrixRow>,
}

/// One row of `matrix`.
#[derive(Serialize, JsonSchema)]
pub struct MatrixRow {
    /// The row's id.
    pub id: &'static str,
    /// `ok`, `violation` (with `violated`) or `unknown`.
    #[serde(flatten)]
    pub verdict: locklab_models::catalog::Verdict,
    /// The catalog's verdict.
    pub expected: locklab_models::scenario::Expected,
    /// Its promises (absent where its family states none).
    pub progress: Option<Promises>,
    /// Whether `verdict` is `expected`.
    pub matches_expected: bool,
    /// Successor states generated.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The deepest level reached.
    pub max_depth: usize,
    /// Wall time of the search.
    pub seconds: f64,
    /// Generated states per second.
    pub states_per_second: f64,
    /// Each story's length.
    pub counterexample_steps: Vec<usize>,
}

/// `locklab report DIR`.
#[derive(Serialize, JsonSchema)]
pub struct Site<'a> {
    /// Where the pages are.
    pub dir: &'a std::path::Path,
    /// The index page.
    pub index: &'a std::path::Path,
    /// The answer, as the exit code (see [`Matrix::verdict`]).
    pub verdict: Verdict,
    /// Whether every row's verdict is the catalog's.
    pub all_match: bool,
    /// One page per row.
    pub scenarios: &'a [locklab_traces::diagram::IndexRow],
}

/// `locklab export`.
#[derive(Serialize, JsonSchema)]
pub struct Exported<'a> {
    /// The history read.
    pub source: &'a str,
    /// The file written.
    pub output: &'a std::path::Path,
    /// `edn` or `jsonl`.
    pub to: &'a str,
    /// Events written.
    pub events: usize,
    /// What the reader noticed (skipped lines, guessed fields).
    pub warnings: &'a [String],
}

/// `locklab explore`.
#[derive(Serialize, JsonSchema)]
pub struct Serving {
    /// The Explorer's address (loopback).
    pub serving: String,
}

/// `locklab run --list`.
#[cfg(feature = "harness")]
#[derive(Serialize, JsonSchema)]
pub struct Runnable {
    /// The rows `run` can run.
    pub scenarios: Vec<RunnableRow>,
}

/// One row `run` can run.
#[cfg(feature = "harness")]
#[derive(Serialize, JsonSchema)]
pub struct RunnableRow {
    /// The catalog id.
    pub id: &'static str,
    /// The faults its plan injects, in words.
    pub faults: &'static str,
}

/// `locklab bench inventory`.
#[cfg(feature = "sql")]
#[derive(Serialize, JsonSchema)]
pub struct Bench<'a> {
    /// One row per workload, backend and strategy.
    pub rows: &'a [locklab_jepsen::sql::inventory::BenchRow],
    /// Where `--plot` wrote the sweep's figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plot: Option<String>,
}
