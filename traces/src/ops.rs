//! Pairs each invocation with its completion, the way Jepsen reads a history.
//!
//! A process has at most one operation outstanding. `ok` and `fail` are answers from the
//! service (`fail`: it refused — busy, not yours, CAS mismatch, sold out — and nothing
//! changed); `info` means the outcome is unknown, so the operation may take effect at
//! any time after its invocation, as does one that never completed.

use std::collections::HashMap;

use crate::error::HistoryError;
use crate::format::{Event, History, OpKind, Phase, Process};

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Took effect with the completion's result.
    Ok,
    /// The service refused; nothing changed.
    Fail,
    /// May or may not have taken effect (`info`, or no completion at all).
    Unknown,
}

/// An invocation and its completion, borrowed from the history they were read from:
/// copies of the events were a quarter of a large history's check.
#[derive(Clone, Copy, Debug)]
pub struct Operation<'h> {
    /// The client.
    pub process: u32,
    /// What it did.
    pub kind: OpKind,
    /// The invocation event and its line.
    pub invoke: (usize, &'h Event),
    /// The completion event and its line (`None`: never completed).
    pub completion: Option<(usize, &'h Event)>,
    /// How it ended.
    pub outcome: Outcome,
}

impl Operation<'_> {
    /// When it was invoked (ns).
    pub fn call(&self) -> u64 {
        self.invoke.1.time
    }

    /// When it completed with a known outcome (`None`: unknown, open to the end).
    pub fn ret(&self) -> Option<u64> {
        match self.outcome {
            Outcome::Unknown => None,
            _ => self.completion.as_ref().map(|(_, e)| e.time),
        }
    }

    /// The lease the operation was held to (ns): the one the lock said it granted on
    /// an `ok` completion (an external client's `lease_ms`), else the one asked for on
    /// the invocation.
    pub fn lease_ns(&self) -> Option<u64> {
        let granted = match self.outcome {
            Outcome::Ok => self.completion.as_ref().and_then(|(_, e)| e.lease_ns),
            _ => None,
        };
        granted.or(self.invoke.1.lease_ns)
    }

    /// The owner identity the lock saw: the recorded one, else the process number.
    pub fn owner(&self) -> u64 {
        self.invoke.1.owner.unwrap_or(self.process as u64)
    }

    /// The fencing token: the completion's, else the invocation's.
    pub fn token(&self) -> Option<u64> {
        self.completion
            .as_ref()
            .and_then(|(_, e)| e.token)
            .or(self.invoke.1.token)
    }

    /// The key: the invocation's, else the completion's.
    pub fn key(&self) -> Option<&str> {
        self.invoke
            .1
            .key
            .as_deref()
            .or_else(|| self.completion.as_ref().and_then(|(_, e)| e.key.as_deref()))
    }

    /// The completion's value, for reads.
    pub fn result_value(&self) -> Option<serde_json::Value> {
        self.completion.as_ref().and_then(|(_, e)| e.value_json())
    }

    /// The line of the invocation.
    pub fn line(&self) -> usize {
        self.invoke.0
    }

    /// The line of the completion, where its returned value stands (the invocation's
    /// when it never completed).
    pub fn result_line(&self) -> usize {
        self.completion.map_or(self.invoke.0, |(l, _)| l)
    }
}

/// A history split into operations and point events.
#[derive(Clone, Debug, Default)]
pub struct Paired<'h> {
    /// Operations in invocation order.
    pub ops: Vec<Operation<'h>>,
    /// Critical-section markers, nemesis actions and raw commands, with their lines.
    pub points: Vec<(usize, &'h Event)>,
    /// The latest time in the history.
    pub end_time: u64,
    /// Where the `command` events' values are, when not in `points`
    /// ([`History::commands_at`]).
    pub commands_at: Option<&'h std::path::Path>,
}

impl Paired<'_> {
    /// Calls `f` with each `command` event and its line, in file order, whole (value
    /// and note): from `points`, or read again one at a time from the file a lean read
    /// left them in. Stops at `f`'s first error, or at a line of the file that no
    /// longer reads.
    pub fn each_command(
        &self,
        mut f: impl FnMut(usize, &Event) -> Result<(), String>,
    ) -> Result<(), String> {
        match self.commands_at {
            Some(path) => crate::reader::each_command(path, self.commands(), f),
            None => self.commands().try_for_each(|(line, e)| f(line, e)),
        }
    }

    /// The `command` events of `points` with their lines, in file order (bare after a
    /// lean read).
    fn commands(&self) -> impl Iterator<Item = (usize, &Event)> + '_ {
        self.points
            .iter()
            .filter(|(_, e)| e.op == crate::format::OpKind::Command)
            .map(|(line, e)| (*line, *e))
    }
}

/// Pairs the events of `history`.
pub fn pair(history: &History) -> Result<Paired<'_>, HistoryError> {
    let src = history.source.as_str();
    let mut paired = Paired {
        commands_at: history.commands_at.as_deref(),
        ..Paired::default()
    };
    let mut pending: HashMap<u32, usize> = HashMap::new();
    for (line, event) in &history.events {
        paired.end_time = paired.end_time.max(event.time);
        if event.op.is_point() {
            paired.points.push((*line, event));
            continue;
        }
        let process = match event.process {
            Process::Client(c) => c,
            Process::Nemesis(_) => {
                return Err(HistoryError::at(
                    src,
                    *line,
                    format!(
                        "the nemesis cannot perform the client operation \"{}\"",
                        event.op
                    ),
                ))
            }
        };
        match event.phase {
            Phase::Invoke => {
                if let Some(&open) = pending.get(&process) {
                    let prev = &paired.ops[open];
                    return Err(HistoryError::at(
                        src,
                        *line,
                        format!(
                            "c{process} invokes {} while its {} from line {} has not completed (one operation at a time per process)",
                            event.op,
                            prev.kind,
                            prev.line()
                        ),
                    ));
                }
                pending.insert(process, paired.ops.len());
                paired.ops.push(Operation {
                    process,
                    kind: event.op,
                    invoke: (*line, event),
                    completion: None,
                    outcome: Outcome::Unknown,
                });
            }
            phase => {
                let Some(index) = pending.remove(&process) else {
                    return Err(HistoryError::at(
                        src,
                        *line,
                        format!("completion ({phase}) of {} by c{process} without an invocation before it", event.op),
                    ));
                };
                let op = &mut paired.ops[index];
                if op.kind != event.op {
                    return Err(HistoryError::at(
                        src,
                        *line,
                        format!(
                            "c{process} completes {} but invoked {} at line {}",
                            event.op,
                            op.kind,
                            op.line()
                        ),
                    ));
                }
                if event.time < op.call() {
                    return Err(HistoryError::at(
                        src,
                        *line,
                        format!(
                            "returns at {} ns, before it was called at {} ns (line {})",
                            event.time,
                            op.call(),
                            op.line()
                        ),
                    ));
                }
                op.outcome = match phase {
                    Phase::Ok => Outcome::Ok,
                    Phase::Fail => Outcome::Fail,
                    _ => Outcome::Unknown,
                };
                op.completion = Some((*line, event));
            }
        }
    }
    Ok(paired)
}
