//! Every statement the SQL locks send, with its window, in sending order: the SQL
//! counterpart of the Redis [`Recorder`](crate::redis::Recorder). Statements and replies
//! are the spec's types (`locklab_models::sql::spec`), so a recording can be held
//! against the same server semantics the models use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use locklab_models::sql::spec::{SqlCommand, SqlReply};

/// One statement and what came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Sending order.
    pub seq: u64,
    /// The server's id of the session (`CONNECTION_ID()`, `pg_backend_pid()`).
    pub session: u64,
    /// What was sent.
    pub command: SqlCommand,
    /// The reply; `None` when none came (an error that says nothing about the effect).
    pub reply: Option<SqlReply>,
    /// When it left, in nanoseconds since the log was made.
    pub sent_ns: u64,
    /// When the reply (or the error) came.
    pub done_ns: u64,
}

/// A shared, append-only statement log; clone it into every session of a run.
#[derive(Clone, Debug)]
pub struct StatementLog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base: Instant,
    seq: AtomicU64,
    log: Mutex<Vec<Statement>>,
}

impl Default for StatementLog {
    fn default() -> Self {
        Self::new()
    }
}

impl StatementLog {
    /// An empty log; times count from now.
    pub fn new() -> Self {
        StatementLog {
            inner: Arc::new(Inner {
                base: Instant::now(),
                seq: AtomicU64::new(0),
                log: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Nanoseconds since the log was made.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.inner.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A sequence number and the sending instant, taken as the statement leaves.
    pub(crate) fn begin(&self) -> (u64, u64) {
        (self.inner.seq.fetch_add(1, Ordering::AcqRel), self.now_ns())
    }

    pub(crate) fn finish(
        &self,
        (seq, sent_ns): (u64, u64),
        session: u64,
        command: SqlCommand,
        reply: Option<SqlReply>,
    ) {
        let done_ns = self.now_ns();
        let mut log = self.inner.log.lock().unwrap_or_else(|p| p.into_inner());
        log.push(Statement {
            seq,
            session,
            command,
            reply,
            sent_ns,
            done_ns,
        });
    }

    /// Every statement so far, in sending order.
    pub fn statements(&self) -> Vec<Statement> {
        let mut v = self
            .inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        v.sort_by_key(|s| s.seq);
        v
    }
}
