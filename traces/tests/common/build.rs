//! Hand-written histories, built event by event with times in milliseconds: the lock
//! operations a client records, and the requests (`command` events) a recorder hears on
//! the wire.

use locklab_traces::check::{check_history, CheckReport, Options, Property, Report};
use locklab_traces::format::{Backend, Event, Header, History, OpKind, Phase, Process};
use serde_json::Value;

pub const MS: u64 = 1_000_000;

/// Each client's session id, in the requests of a history built `with_sessions`.
pub fn session(p: u32) -> u64 {
    0x0100_0000_0000_0000 + u64::from(p)
}

/// A history built event by event.
pub struct Build {
    pub history: History,
    /// The key every event is on (`None`: no key, but on what `op` records).
    every_key: Option<&'static str>,
    /// The lease of every acquire `op` records (ms).
    lease_ms: Option<u64>,
    /// Whether each request names its client's session.
    sessions: bool,
}

impl Default for Build {
    fn default() -> Self {
        Self::new()
    }
}

impl Build {
    /// A simulated history.
    pub fn new() -> Self {
        Self::of("test", Backend::Simulated)
    }

    /// A history of `protocol` on `backend`.
    pub fn of(protocol: &str, backend: Backend) -> Self {
        Build {
            history: History {
                source: "test".into(),
                header: Header::new(protocol, backend),
                ..History::default()
            },
            every_key: None,
            lease_ms: None,
            sessions: false,
        }
    }

    /// Every event from now on is on `key`.
    pub fn every_event_on(mut self, key: &'static str) -> Self {
        self.every_key = Some(key);
        self
    }

    /// Every acquire `op` records asks for a lease of `ms`.
    pub fn leases(mut self, ms: u64) -> Self {
        self.lease_ms = Some(ms);
        self
    }

    /// Every request names its client's [`session`].
    pub fn with_sessions(mut self) -> Self {
        self.sessions = true;
        self
    }

    /// One event of client `p` at `ms`, filled in by `f`.
    pub fn ev(
        mut self,
        p: u32,
        op: OpKind,
        phase: Phase,
        ms: u64,
        f: impl FnOnce(&mut Event),
    ) -> Self {
        let mut e = Event::new(Process::Client(p), op, phase, ms * MS);
        e.key = self.every_key.map(Into::into);
        f(&mut e);
        let line = self.history.events.len() + 2;
        self.history.events.push((line, e));
        self
    }

    /// An acquire of a `lease_ms` lease invoked at `ms`, never completed.
    pub fn acquire_invoked(self, p: u32, ms: u64, lease_ms: u64) -> Self {
        self.ev(p, OpKind::Acquire, Phase::Invoke, ms, |e| {
            e.lease_ns = Some(lease_ms * MS)
        })
    }

    /// An acquire of a `lease_ms` lease over `[from, to]` that ended `phase` (refused,
    /// or of unknown outcome).
    pub fn acquire_ended(self, p: u32, from: u64, to: u64, lease_ms: u64, phase: Phase) -> Self {
        self.acquire_invoked(p, from, lease_ms)
            .ev(p, OpKind::Acquire, phase, to, |_| {})
    }

    /// An acquire of a `lease_ms` lease over `[from, to]`, granted with `token`.
    pub fn acquire(self, p: u32, from: u64, to: u64, lease_ms: u64, token: Option<u64>) -> Self {
        self.acquire_invoked(p, from, lease_ms)
            .ev(p, OpKind::Acquire, Phase::Ok, to, |e| e.token = token)
    }

    /// A renewal for `lease_ms` over `[from, to]`, granted.
    pub fn renew(self, p: u32, from: u64, to: u64, lease_ms: u64) -> Self {
        self.ev(p, OpKind::Renew, Phase::Invoke, from, |e| {
            e.lease_ns = Some(lease_ms * MS)
        })
        .ev(p, OpKind::Renew, Phase::Ok, to, |_| {})
    }

    /// A release over `[from, to]` that ended `phase`.
    pub fn release(self, p: u32, from: u64, to: u64, phase: Phase) -> Self {
        self.ev(p, OpKind::Release, Phase::Invoke, from, |_| {}).ev(
            p,
            OpKind::Release,
            phase,
            to,
            |_| {},
        )
    }

    /// A lock operation on key `lock` over `[from, to]`, done; an acquire asks for the
    /// history's lease, if it has one.
    pub fn op(self, p: u32, op: OpKind, from: u64, to: u64) -> Self {
        let lease = self.lease_ms.filter(|_| op == OpKind::Acquire);
        self.ev(p, op, Phase::Invoke, from, |e| {
            e.key = Some("lock".into());
            e.lease_ns = lease.map(|ms| ms * MS);
        })
        .ev(p, op, Phase::Ok, to, |e| e.key = Some("lock".into()))
    }

    /// A marker of client `p`'s critical section: `Enter` or `Leave`, ended `phase`.
    pub fn mark(self, p: u32, op: OpKind, ms: u64, phase: Phase) -> Self {
        self.ev(p, op, phase, ms, |_| {})
    }

    /// A read over `[from, to]` that returned `value` (`None`: a read with no value).
    pub fn read(self, p: u32, from: u64, to: u64, value: Option<i64>) -> Self {
        self.ev(p, OpKind::Read, Phase::Invoke, from, |_| {}).ev(
            p,
            OpKind::Read,
            Phase::Ok,
            to,
            |e| e.value = value.map(|v| serde_json::Value::from(v).into()),
        )
    }

    /// A write of `value` over `[from, to]`, accepted; fenced with `token`, if any.
    pub fn write(self, p: u32, from: u64, to: u64, value: i64, token: Option<u64>) -> Self {
        self.ev(p, OpKind::Write, Phase::Invoke, from, |e| {
            e.token = token;
            e.value = Some(serde_json::Value::from(value).into())
        })
        .ev(p, OpKind::Write, Phase::Ok, to, |_| {})
    }

    /// A request over `[from, to]`; `reply: None` is one that got no reply.
    pub fn cmd(self, p: u32, command: Value, from: u64, to: u64, reply: Option<Value>) -> Self {
        let phase = if reply.is_some() {
            Phase::Ok
        } else {
            Phase::Info
        };
        let mut value = serde_json::json!({"node": 0, "command": command, "return": to * MS});
        if self.sessions {
            value["session"] = session(p).into();
        }
        if let Some(r) = reply {
            value["reply"] = r;
        }
        self.ev(p, OpKind::Command, phase, from, |e| {
            e.value = Some(value.into())
        })
    }

    /// Every check the history calls for; the same read back lean from its file.
    pub fn check(&self) -> Report {
        checked_both_ways(&self.history)
    }

    /// The no-foreign-release check.
    pub fn foreign(&self) -> CheckReport {
        self.check()
            .checks
            .into_iter()
            .find(|c| c.property == Property::NoForeignRelease)
            .expect("a foreign-release check")
    }
}

/// The report's `p` check; a missing one fails the test.
pub fn check_of(report: &Report, p: Property) -> &CheckReport {
    report
        .checks
        .iter()
        .find(|c| c.property == p)
        .unwrap_or_else(|| panic!("no {p:?} check in {report:#?}"))
}

/// The report on `history`, which must be the report on it written to a file and read
/// back lean (its `command` events read again from the file by the checks that need
/// them), the way `run` and `check-history` read a long run's.
pub fn checked_both_ways(history: &History) -> Report {
    let whole = check_history(history, &Options::default()).expect("checks");
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    // Blank lines keep each event on its line (a test may have taken events out).
    let mut text = serde_json::to_string(&history.header).expect("serializes") + "\n";
    let mut at = 2;
    for (line, e) in &history.events {
        assert!(*line >= at, "events in line order");
        text.push_str(&"\n".repeat(line - at));
        text.push_str(&serde_json::to_string(e).expect("serializes"));
        text.push('\n');
        at = line + 1;
    }
    std::fs::write(file.path(), text).expect("writes");
    let lean = locklab_traces::reader::read_path_lean(file.path()).expect("reads back");
    let mut read = check_history(&lean, &Options::default()).expect("checks");
    read.source.clone_from(&whole.source);
    let json = |r: &Report| {
        serde_json::to_string_pretty(r)
            .expect("serializes")
            .replace(&file.path().display().to_string(), "test")
    };
    assert_eq!(json(&read), json(&whole), "read lean from the file");
    whole
}
