//! Records every exchange of one or more nodes, in sending order: kept in memory for a
//! test to read, or handed one at a time to a sink (a run's history) as each ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// One command and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// Order of sending, over every node of the recorder.
    pub seq: u64,
    /// Which node (index in the client's node list; 0 for single-node locks).
    pub node: usize,
    /// What was sent.
    pub command: RedisCommand,
    /// The reply, or `None` when none came (connection lost, timeout: outcome unknown).
    pub reply: Option<RedisReply>,
    /// When it was sent, in ns since the recorder's start.
    pub sent_ns: u64,
    /// When the reply (or the failure) came, in ns since the recorder's start.
    pub done_ns: u64,
}

/// A shared log of [`Exchange`]s. Clone it into the nodes of one client (or of several,
/// to see them interleaved); read it with [`Recorder::exchanges`], or make it hand each
/// exchange to a sink instead ([`Recorder::streaming`]).
#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Inner>,
}

/// Where a streaming recorder puts each exchange.
pub type Sink = Box<dyn Fn(Exchange) + Send + Sync>;

struct Inner {
    base: Instant,
    seq: AtomicU64,
    log: Mutex<Vec<Exchange>>,
    sink: Option<Sink>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("base", &self.base)
            .field("streaming", &self.sink.is_some())
            .finish()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty log; times are counted from now.
    pub fn new() -> Self {
        Self::with(Instant::now(), None)
    }

    /// A recorder that keeps nothing and hands each exchange to `sink` as it ends (from
    /// the task that sent it); times are counted from `base` (a run's clock).
    pub fn streaming(base: Instant, sink: impl Fn(Exchange) + Send + Sync + 'static) -> Self {
        Self::with(base, Some(Box::new(sink)))
    }

    fn with(base: Instant, sink: Option<Sink>) -> Self {
        Recorder {
            inner: Arc::new(Inner {
                base,
                seq: AtomicU64::new(0),
                log: Mutex::new(Vec::new()),
                sink,
            }),
        }
    }

    /// Nanoseconds since the recorder's base instant.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.inner.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Takes a sequence number at sending time, so the order is the order commands left.
    pub(crate) fn begin(&self) -> (u64, u64) {
        (self.inner.seq.fetch_add(1, Ordering::AcqRel), self.now_ns())
    }

    pub(crate) fn finish(
        &self,
        (seq, sent_ns): (u64, u64),
        node: usize,
        command: RedisCommand,
        reply: Option<RedisReply>,
    ) {
        let exchange = Exchange {
            seq,
            node,
            command,
            reply,
            sent_ns,
            done_ns: self.now_ns(),
        };
        match &self.inner.sink {
            Some(sink) => sink(exchange),
            None => self
                .inner
                .log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(exchange),
        }
    }

    /// Every exchange so far, in sending order (none for a streaming recorder).
    pub fn exchanges(&self) -> Vec<Exchange> {
        let mut v = self
            .inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        v.sort_by_key(|e| e.seq);
        v
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        self.inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
