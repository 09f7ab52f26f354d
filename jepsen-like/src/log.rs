//! The run's history as it is written: one clock for every client and the nemesis, and
//! each event flushed to disk as it happens. It also notes the milestones a nemesis
//! step can wait for (the first grant, a client entering its section).

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use locklab_traces::format::{Event, Header, Injected, OpKind, Phase, Process};
use locklab_traces::writer::HistoryWriter;

/// The history being recorded.
pub struct Log {
    writer: HistoryWriter<File>,
    base: Instant,
    events: AtomicU64,
    write_errors: AtomicU64,
    grants: AtomicU64,
    /// Bit `c` is set once client `c` (< 64) entered its critical section.
    entered: AtomicU64,
    /// Bit `c` is set while client `c` (< 64) is inside its critical section.
    inside: AtomicU64,
    /// Entries into a critical section so far, by any client.
    entries: AtomicU64,
    /// Whether a client has entered while another was inside.
    overlapped: AtomicBool,
}

impl Log {
    /// Creates `path` and writes the header; times count from now.
    pub fn create(path: &std::path::Path, header: &Header) -> std::io::Result<Log> {
        let file = File::create(path)?;
        Ok(Log {
            writer: HistoryWriter::new(file, header)?,
            base: Instant::now(),
            events: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            grants: AtomicU64::new(0),
            entered: AtomicU64::new(0),
            inside: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            overlapped: AtomicBool::new(false),
        })
    }

    /// Nanoseconds since the log was created.
    pub fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Stamps `event` with the current time and appends it. A failed write is counted
    /// (and reported after the run) rather than stopping the clients mid-operation.
    pub fn record(&self, mut event: Event) {
        event.time = self.now();
        self.note(&event);
        if self.writer.record(&event).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends `event` stamped with the run-clock time of `at` (an instant already
    /// past, such as the start of a wait that only now turned out to be an operation).
    pub fn record_at(&self, mut event: Event, at: Instant) {
        event.time =
            u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX);
        self.note(&event);
        if self.writer.record(&event).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    fn note(&self, event: &Event) {
        match (event.op, event.phase, event.process) {
            (OpKind::Acquire, Phase::Ok, _) => {
                self.grants.fetch_add(1, Ordering::Relaxed);
            }
            (OpKind::Enter, _, Process::Client(c)) if c < 64 => {
                self.entered.fetch_or(1 << c, Ordering::Relaxed);
                let before = self.inside.fetch_or(1 << c, Ordering::Relaxed);
                if before & !(1 << c) != 0 {
                    self.overlapped.store(true, Ordering::Relaxed);
                }
                self.entries.fetch_add(1, Ordering::Relaxed);
            }
            (OpKind::Leave, _, Process::Client(c)) if c < 64 => {
                self.inside.fetch_and(!(1 << c), Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Grants recorded so far.
    pub fn grants(&self) -> u64 {
        self.grants.load(Ordering::Relaxed)
    }

    /// Whether client `c` has entered its critical section (`None`: any client).
    pub fn entered(&self, c: Option<u32>) -> bool {
        let bits = self.entered.load(Ordering::Relaxed);
        match c {
            None => bits != 0,
            Some(c) => c < 64 && bits & (1 << c) != 0,
        }
    }

    /// Whether a client other than `c` is inside its critical section now (as far as
    /// its own `enter` and `leave` say: a client that crashed inside stays inside).
    pub fn another_inside(&self, c: u32) -> bool {
        let mine = if c < 64 { 1 << c } else { 0 };
        self.inside.load(Ordering::Relaxed) & !mine != 0
    }

    /// Whether a client has entered its critical section while another was inside.
    pub fn overlapped(&self) -> bool {
        self.overlapped.load(Ordering::Relaxed)
    }

    /// Entries into a critical section so far, by any client.
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// The instant the run clock counts from, for recorders that stamp their own
    /// events on it (the clients' Redis commands).
    pub fn base(&self) -> Instant {
        self.base
    }

    /// Appends `event` with the run-clock time it already carries.
    pub fn record_stamped(&self, event: Event) {
        self.note(&event);
        if self.writer.record(&event).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// An event for `process` now (the time is set when recorded).
    pub fn event(process: Process, op: OpKind, phase: Phase) -> Event {
        Event::new(process, op, phase, 0)
    }

    /// Records a nemesis action or observation: the one way a run writes one.
    pub fn nemesis(&self, done: Injected, note: Option<String>) {
        self.record(Log::nemesis_event(done, note));
    }

    /// Records a nemesis action stamped at `at` (an instant already past: its note
    /// could only be written later).
    pub fn nemesis_at(&self, at: Instant, done: Injected, note: Option<String>) {
        self.record_at(Log::nemesis_event(done, note), at);
    }

    fn nemesis_event(done: Injected, note: Option<String>) -> Event {
        let mut e = Log::event(Process::NEMESIS, OpKind::Nemesis, Phase::Info);
        e.value = Some(done.to_json().into());
        e.note = note;
        e
    }

    /// Events recorded so far.
    pub fn count(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Events that could not be written.
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }
}
