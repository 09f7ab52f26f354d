//! The one error type of every lock client.

use std::time::Duration;

/// Why a lock operation failed.
///
/// [`LockError::is_retryable`] tells the acquire loop which failures are worth another
/// attempt before the wait timeout runs out (a dropped connection, a missed quorum) and
/// which are final (bad configuration, an unsupported lease).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock stayed busy (or the backend unreachable) for the whole wait timeout.
    #[error("lock {key:?} not acquired within {waited:?}{}", last_error.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default())]
    Timeout {
        /// The lock name.
        key: String,
        /// How long the caller waited.
        waited: Duration,
        /// The last backend error seen while waiting, when the lock was not simply busy.
        last_error: Option<Box<LockError>>,
    },
    /// The backend could not be reached or answered with an error.
    #[error("backend error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A command got no answer within the client's response timeout.
    #[error("no answer from {node} within {timeout:?}")]
    NoAnswer {
        /// The server address.
        node: String,
        /// The response timeout.
        timeout: Duration,
    },
    /// The backend answered something the protocol does not allow.
    #[error("unexpected reply to {command}: {reply}")]
    UnexpectedReply {
        /// The command, as sent.
        command: String,
        /// What came back.
        reply: String,
    },
    /// Release or renew found that this client no longer holds the lock (the lease ran
    /// out, or someone else holds it now).
    #[error("lock {key:?} is not held by this client{}", reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default())]
    NotHeld {
        /// The lock name.
        key: String,
        /// Why, in the lock's own words, when it said (an external client's
        /// `reason`).
        reason: Option<String>,
    },
    /// The protocol cannot do what was asked (a lease kind, a renewal).
    #[error("{protocol} does not support {what}")]
    Unsupported {
        /// The protocol id.
        protocol: &'static str,
        /// What was asked.
        what: &'static str,
    },
    /// Redlock: fewer nodes granted the lock than a majority, or the validity left was
    /// not positive. The partial grants were released.
    #[error("no quorum: {granted} of {nodes} nodes granted, {needed} needed (validity left {validity_ms} ms)")]
    NoQuorum {
        /// Nodes that granted.
        granted: usize,
        /// Nodes asked.
        nodes: usize,
        /// Majority.
        needed: usize,
        /// Validity left after the attempt (negative: the attempt took longer than the TTL).
        validity_ms: i64,
    },
    /// `WAIT` reported fewer replicas than asked for; the lock was released again.
    #[error("only {acked} of {wanted} replicas acknowledged the lock")]
    NotReplicated {
        /// Replicas that acknowledged.
        acked: i64,
        /// Replicas asked for.
        wanted: i64,
    },
    /// A fault injected on purpose by a teaching lock (a crash between two commands).
    #[error("injected fault: {0}")]
    InjectedFault(&'static str),
    /// The lock's client process is gone (it exited, or closed its output): nothing it
    /// was asked will be answered, now or later. The harness records it as a crash of
    /// that client.
    #[error("the client process is gone: {0}")]
    ClientGone(String),
    /// The configuration is unusable.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The release ended the lock's transaction with `ROLLBACK`, on purpose (a fault
    /// asked for it), and the server answered: every write in it certainly did not
    /// happen.
    #[error("{key}: the transaction was rolled back, its writes undone")]
    RolledBack {
        /// The lock name.
        key: String,
    },
}

impl LockError {
    /// Whether the acquire loop should try again (within its wait timeout).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LockError::Backend(_)
                | LockError::NoAnswer { .. }
                | LockError::NoQuorum { .. }
                | LockError::NotReplicated { .. }
        )
    }

    /// Wraps any backend error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        LockError::Backend(Box::new(e))
    }
}
