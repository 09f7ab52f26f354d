//! Records every exchange a client has with its servers, in sending order, for any
//! family's wire vocabulary ([`Wire`]: Redis commands, SQL statements): kept in memory
//! for a test to read, or handed one at a time to a sink (a run's history) as each
//! ends. [`exchange_event`] makes a run-history `command` event of one exchange.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use locklab_traces::format::CommandValue;
use locklab_traces::{Event, OpKind, Phase, Process};
use serde::Serialize;

/// A family's wire vocabulary: what a client sends and what comes back, as the family's
/// spec states them.
pub trait Wire: Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// What is sent.
    type Command: Clone + fmt::Debug + PartialEq + Serialize + Send + Sync + 'static;
    /// What comes back.
    type Reply: Clone + fmt::Debug + PartialEq + Serialize + Send + Sync + 'static;
    /// The history key a command touches.
    fn key(command: &Self::Command) -> Option<String>;
    /// The command as a person would type it.
    fn command_text(command: &Self::Command) -> String;
    /// The reply as a client's shell would print it.
    fn reply_text(reply: &Self::Reply) -> String;
}

/// One command and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange<W: Wire> {
    /// Order of sending, over every node of the recorder.
    pub seq: u64,
    /// Which node (index in the client's node list; 0 for single-node locks).
    pub node: usize,
    /// The server's id of the session it went over, where the server names sessions
    /// (`CONNECTION_ID()`, `pg_backend_pid()`).
    pub session: Option<u64>,
    /// What was sent.
    pub command: W::Command,
    /// The reply, or `None` when none came (connection lost, timeout: outcome unknown).
    pub reply: Option<W::Reply>,
    /// When it was sent, in ns since the recorder's start.
    pub sent_ns: u64,
    /// When the reply (or the failure) came, in ns since the recorder's start.
    pub done_ns: u64,
}

/// A shared log of [`Exchange`]s. Clone it into the nodes of one client (or of several,
/// to see them interleaved); read it with [`Recorder::exchanges`], or make it hand each
/// exchange to a sink instead ([`Recorder::streaming`]).
#[derive(Clone, Debug)]
pub struct Recorder<W: Wire> {
    inner: Arc<Inner<W>>,
}

/// Where a streaming recorder puts each exchange.
pub type Sink<W> = Box<dyn Fn(Exchange<W>) + Send + Sync>;

struct Inner<W: Wire> {
    base: Instant,
    seq: AtomicU64,
    log: Mutex<Vec<Exchange<W>>>,
    sink: Option<Sink<W>>,
}

impl<W: Wire> fmt::Debug for Inner<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("base", &self.base)
            .field("streaming", &self.sink.is_some())
            .finish()
    }
}

impl<W: Wire> Default for Recorder<W> {
    fn default() -> Self {
        Self::new()
    }
}

/// A begun exchange: its sequence number and sending time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Begun(u64, u64);

impl<W: Wire> Recorder<W> {
    /// An empty log; times are counted from now.
    pub fn new() -> Self {
        Self::with(Instant::now(), None)
    }

    /// A recorder that keeps nothing and hands each exchange to `sink` as it ends (from
    /// the task that sent it); times are counted from `base` (a run's clock).
    pub fn streaming(base: Instant, sink: impl Fn(Exchange<W>) + Send + Sync + 'static) -> Self {
        Self::with(base, Some(Box::new(sink)))
    }

    fn with(base: Instant, sink: Option<Sink<W>>) -> Self {
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
    pub(crate) fn begin(&self) -> Begun {
        Begun(self.inner.seq.fetch_add(1, Ordering::AcqRel), self.now_ns())
    }

    pub(crate) fn finish(
        &self,
        Begun(seq, sent_ns): Begun,
        node: usize,
        session: Option<u64>,
        command: W::Command,
        reply: Option<W::Reply>,
    ) {
        let exchange = Exchange {
            seq,
            node,
            session,
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
    pub fn exchanges(&self) -> Vec<Exchange<W>> {
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

/// The history event of one exchange made by `process`. `offset_ns` is the run-clock
/// time at which the recorder started (0 when both count from the same instant). The
/// phase is `ok` when a reply came and `info` (outcome unknown) when none did.
pub fn exchange_event<W: Wire>(process: Process, exchange: &Exchange<W>, offset_ns: u64) -> Event {
    let phase = if exchange.reply.is_some() {
        Phase::Ok
    } else {
        Phase::Info
    };
    let mut event = Event::new(
        process,
        OpKind::Command,
        phase,
        offset_ns.saturating_add(exchange.sent_ns),
    );
    event.key = W::key(&exchange.command).map(Into::into);
    let value = CommandValue {
        node: exchange.node,
        session: exchange.session,
        command: serde_json::to_value(&exchange.command).unwrap_or_default(),
        reply: exchange
            .reply
            .as_ref()
            .and_then(|r| serde_json::to_value(r).ok()),
        return_time: offset_ns.saturating_add(exchange.done_ns),
    };
    event.value = serde_json::to_value(value).ok().map(Into::into);
    let command = W::command_text(&exchange.command);
    event.note = Some(match &exchange.reply {
        Some(r) => format!("{command} -> {}", W::reply_text(r)),
        None => format!("{command} -> no reply"),
    });
    event
}

/// A recorder that writes every exchange of `process` through `write` as a `command`
/// event, on the run clock that started at `base` (the run's history hands its own).
pub fn event_recorder<W: Wire>(
    process: Process,
    base: Instant,
    write: impl Fn(Event) + Send + Sync + 'static,
) -> Recorder<W> {
    Recorder::streaming(base, move |exchange| {
        write(exchange_event(process, &exchange, 0))
    })
}
