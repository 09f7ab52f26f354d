//! Records every exchange of one or more nodes, in sending order.

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
/// to see them interleaved); read it with [`Recorder::exchanges`].
#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base: Instant,
    seq: AtomicU64,
    log: Mutex<Vec<Exchange>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty log; times are counted from now.
    pub fn new() -> Self {
        Recorder {
            inner: Arc::new(Inner {
                base: Instant::now(),
                seq: AtomicU64::new(0),
                log: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Nanoseconds since the recorder was created.
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
        let done_ns = self.now_ns();
        let mut log = self.inner.log.lock().unwrap_or_else(|p| p.into_inner());
        log.push(Exchange {
            seq,
            node,
            command,
            reply,
            sent_ns,
            done_ns,
        });
    }

    /// Every exchange so far, in sending order.
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
