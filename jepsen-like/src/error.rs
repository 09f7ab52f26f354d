//! Why a run gave no verdict, by what the caller should do about it (fix the
//! command, fix or retry the machine, report a bug): the command line maps each to its
//! exit code.

/// Why a run gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No such scenario (exit 2).
    #[error("unknown scenario {id:?} for `run`; these run on real servers: {}", known.join(", "))]
    UnknownId {
        /// What was asked.
        id: String,
        /// What can run.
        known: Vec<&'static str>,
    },
    /// A bad option (exit 2).
    #[error("{0}")]
    BadOption(String),
    /// A server is missing or would not start, a port could not be had, a client
    /// program died before `init` (exit 4: the run could not run; fix the machine or
    /// retry).
    #[error("environment: {0}")]
    Environment(String),
    /// The scenario's family is left out of this build (exit 4, as
    /// [`RunError::Environment`]): the message names the feature that builds it.
    #[error("{0}")]
    NotBuilt(String),
    /// The scenario's fault cannot be staged here (exit 4, as
    /// [`RunError::Environment`]): a split brain needs partitions between servers,
    /// which runs on one loopback address cannot make.
    #[error("{0}")]
    CannotStage(String),
    /// The machine spoiled every attempt (exit 4, as [`RunError::Environment`]).
    #[error("environment unreliable, retried: {0}")]
    Unreliable(String),
    /// No answer to compare with: the model gave no verdict within its limits (exit 3).
    #[error("unknown: {0}")]
    Unknown(String),
    /// A bug in locklab.
    #[error("internal error: {0}")]
    Internal(String),
}
