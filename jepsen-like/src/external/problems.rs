//! What an external client did wrong, as the history records it (a `nemesis` event
//! `{"fault": "client-protocol", "target": "c0", "problem": …}` with a note saying what
//! happened) and as the run report lists it. None of them is ever turned into a
//! verdict: an unanswered request is an `info` operation, and a reply that answers
//! nothing is left out of the history.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use locklab_traces::format::{History, Injected, OpKind, What};
use serde::{Deserialize, Serialize};

use crate::log::Log;

/// Events of one kind recorded per client; past it they are only counted.
const RECORDED_PER_KIND: u32 = 10;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A line that is not JSON (or not UTF-8).
    NotJson,
    /// A line longer than the protocol allows (1 MiB).
    LineTooLong,
    /// JSON that is not a reply (no id, an unknown type, a bad token).
    Malformed,
    /// A reply to a request that was never sent.
    Unsolicited,
    /// A second reply to a request that was answered.
    Duplicate,
    /// A reply to a request locklab had stopped waiting for.
    Late,
    /// No reply within the reply timeout.
    Timeout,
    /// The process exited (or closed its stdout) on its own.
    Exited,
}

impl ProblemKind {
    /// Its spelling in the history.
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::NotJson => "not-json",
            ProblemKind::LineTooLong => "line-too-long",
            ProblemKind::Malformed => "malformed",
            ProblemKind::Unsolicited => "unsolicited",
            ProblemKind::Duplicate => "duplicate",
            ProblemKind::Late => "late",
            ProblemKind::Timeout => "timeout",
            ProblemKind::Exited => "exited",
        }
    }
}

/// One problem, read back from a history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClientProblem {
    /// The client (`c0`).
    pub client: String,
    /// What went wrong.
    pub problem: ProblemKind,
    /// When (ns on the run clock).
    pub time_ns: u64,
    /// What happened, in words.
    pub detail: String,
}

/// Records one client's problems in the run's history, each kind up to a bound.
pub struct Recorder {
    client: String,
    log: Arc<Log>,
    counts: Mutex<HashMap<ProblemKind, u32>>,
}

impl Recorder {
    /// Problems of `client`, recorded in `log`.
    pub fn new(client: &str, log: Arc<Log>) -> Self {
        Recorder {
            client: client.to_string(),
            log,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Records that `kind` happened, as `detail` says.
    pub fn record(&self, kind: ProblemKind, detail: &str) {
        let n = {
            let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
            let n = counts.entry(kind).or_insert(0);
            *n += 1;
            *n
        };
        let note = match n {
            n if n <= RECORDED_PER_KIND => format!("{}: {detail}", self.client),
            n if n == RECORDED_PER_KIND + 1 => format!(
                "{}: {detail} (further {} problems of this client are counted, not recorded)",
                self.client,
                kind.name()
            ),
            _ => return,
        };
        self.log.nemesis(
            Injected::new(
                What::Protocol {
                    problem: kind.name().to_string(),
                },
                self.client.clone(),
            ),
            Some(note),
        );
    }
}

/// Every client problem a history records, in order.
pub fn in_history(history: &History) -> Vec<ClientProblem> {
    history
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e.op == OpKind::Nemesis)
        .filter_map(|e| {
            let i = e.injected()?;
            let problem = match &i.what {
                What::Protocol { problem } => {
                    serde_json::from_value(serde_json::Value::String(problem.clone())).ok()?
                }
                What::Client { .. }
                | What::LostReply
                | What::Failover { .. }
                | What::Skipped
                | What::Server(_) => return None,
            };
            Some(ClientProblem {
                client: i.target?,
                problem,
                time_ns: e.time,
                detail: e.note.clone().unwrap_or_default(),
            })
        })
        .collect()
}
