//! Holds a recording against the Redis node spec: the exchanges are linearized with
//! the history checker's search (`locklab_traces::backend::redis::one_redis`), as the commands
//! of a run history are, so there is one search and one reading of the spec.

use locklab_traces::backend::redis::one_redis::{self, CommandOp};
use locklab_traces::check::linear::{Budget, LinResult};

use super::recorder::Exchange;

/// Where a recording and the spec part ways.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// No order of the exchanges is a behaviour of one Redis.
    #[error("{summary}\n{}", explanation.join("\n"))]
    Mismatch {
        /// One sentence, naming the exchange (by sequence number) that cannot follow.
        summary: String,
        /// The longest order the spec accepts and where it gets stuck.
        explanation: Vec<String>,
        /// The sequence numbers of the exchanges that cannot follow it.
        stuck: Vec<u64>,
    },
}

/// The exchanges as the checker's commands, each named by its sequence number.
pub fn command_ops(exchanges: &[Exchange]) -> Vec<CommandOp> {
    exchanges
        .iter()
        .map(|e| CommandOp {
            client: 0,
            node: e.node,
            command: e.command.clone(),
            reply: e.reply.clone(),
            call_ns: e.sent_ns,
            return_ns: e.done_ns,
            line: usize::try_from(e.seq).unwrap_or(usize::MAX),
        })
        .collect()
}

/// Checks that the exchanges (of one or more nodes, overlapping or not) are a behaviour
/// of one Redis per node, each starting empty. An exchange without reply may or may not
/// have taken effect. The "line" of each command in the explanation is its sequence
/// number.
pub fn replay(exchanges: &[Exchange]) -> Result<(), ReplayError> {
    match one_redis::linearize(command_ops(exchanges), &Budget::unlimited()) {
        // An unlimited budget never runs out.
        LinResult::Ok | LinResult::Unknown(_) => Ok(()),
        LinResult::Illegal(ill) => {
            let (summary, explanation) = one_redis::explain(&ill);
            let stuck = ill
                .stuck
                .iter()
                .map(|&i| u64::try_from(ill.ops[i].line).unwrap_or(u64::MAX))
                .collect();
            Err(ReplayError::Mismatch {
                summary,
                explanation,
                stuck,
            })
        }
    }
}
