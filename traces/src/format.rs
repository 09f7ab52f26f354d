//! The history format: JSON Lines, a header line, then one event per line.
//!
//! ```text
//! {"format":"locklab-history","version":1,"protocol":"redis-lua","backend":"redis",...}
//! {"process":0,"op":"acquire","phase":"invoke","time":1200,"key":"lock","lease_ns":3000000000}
//! {"process":0,"op":"acquire","phase":"ok","time":1850,"key":"lock","token":7}
//! {"process":0,"op":"enter","phase":"ok","time":1900}
//! {"process":"nemesis","op":"nemesis","phase":"info","time":2000,"value":{"fault":"pause","target":"c0"}}
//! ```
//! The schema is documented field by field on [`Header`] and [`Event`] (and in
//! `traces/HISTORY.md`).

mod injected;

pub use injected::{ClientStep, Injected, What};
pub use locklab_models::registry::Backend;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` value of a locklab header line.
pub const FORMAT_NAME: &str = "locklab-history";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a history: what ran, against what, under which faults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// The catalog id or protocol name (`redis-lua`, `etcd-jepsen`, …).
    #[serde(default)]
    pub protocol: String,
    /// The backend (`redis`, `mariadb`, `etcd`, …; `imported` for foreign histories).
    #[serde(default)]
    pub backend: Backend,
    /// Servers and their roles, free text (`master 127.0.0.1:16379 + 1 replica + 3 sentinels`).
    #[serde(default)]
    pub topology: String,
    /// What each client endpoint reaches, by index (a `command` event's `node`):
    /// `Sentinel's master`, `n0` … `n4`, `mariadb`. Absent in
    /// histories written before it existed and in imported ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// The planned nemesis schedule, as data.
    #[serde(default)]
    pub nemesis: Vec<Value>,
    /// The seed the workload and nemesis were drawn from.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Versions of the tools and servers involved (`{"locklab": "0.1.0", "redis": "7.0.15"}`).
    #[serde(default)]
    pub tools: serde_json::Map<String, Value>,
    /// The protected resource, when there is one.
    #[serde(default)]
    pub resource: Option<ResourceSpec>,
    /// Whether the lock under test is reentrant.
    #[serde(default)]
    pub reentrant: bool,
    /// Whether the lock server ends leases at some unknown time after their TTL rather
    /// than at it (etcd): the lock check then holds nothing after a TTL against the lock.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late_expiry: bool,
    /// Whether the lock may refuse while nobody holds it (a quorum lock's split vote),
    /// and answer a holder's release "not held" when nodes that had its key died: the
    /// lock check then holds neither against the lock.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spurious_refusals: bool,
    /// The lock model the lock operations follow (absent: [`LockModel::Lease`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockModel>,
}

/// Which resource model the resource operations follow.
///
/// A model says what the operations *are*, and a checker infers nothing beyond it: only
/// [`ResourceSpec::Counter`] and an inventory with `writes_are_updates` say that a write
/// following the client's own read is an update of the value it read, which is what
/// makes "lost update" countable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ResourceSpec {
    /// A read/write register (`read`, `write`). A `null` read is a read of an empty
    /// register, unless the register starts at `initial`.
    Register {
        /// The value before any write (absent: empty).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initial: Option<i64>,
    },
    /// A register with compare-and-set (`read`, `write`, `cas`).
    CasRegister {
        /// The value before any write (absent: empty).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initial: Option<i64>,
    },
    /// A counter updated by read-modify-write: each client reads it, then writes the
    /// value it read plus some delta (locklab's harness workload: plus one). A `null`
    /// read is a read of `initial`. Linearizable as a register; lost updates counted.
    Counter {
        /// The value before any update.
        #[serde(default)]
        initial: i64,
    },
    /// A string map (`get`, `put`, `append` with `key`).
    Kv,
    /// A stock level (`read`, `write`, `decrement`, `cas`) starting at `initial`.
    Inventory {
        /// Units in stock before the run.
        initial: i64,
        /// Whether a `write` that follows the client's own `read` is a sale of
        /// `read - written` units (the read-check-write workloads); without it only
        /// `decrement`s count as sales.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        writes_are_updates: bool,
    },
}

/// Which lock model the lock operations follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockModel {
    /// locklab's lock: owner-aware, leased, reentrant when the header says so, with
    /// increasing fencing tokens; `fail` is a refusal ("busy", "not yours").
    #[default]
    Lease,
    /// Knossos's mutex: no owner, no lease; acquire only when free, release only when
    /// held (by anyone). Jepsen histories are imported with it.
    Mutex,
}

impl Header {
    /// A header for a history of `protocol` on `backend`, everything else empty.
    pub fn new(protocol: &str, backend: Backend) -> Self {
        let mut tools = serde_json::Map::new();
        tools.insert(
            "locklab".into(),
            Value::String(env!("CARGO_PKG_VERSION").into()),
        );
        Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            protocol: protocol.into(),
            backend,
            tools,
            ..Header::default()
        }
    }
}

/// Who did it: a client process, or the nemesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Process {
    /// A client, by number.
    Client(u32),
    /// The fault injector (written as `"nemesis"`).
    Nemesis(NemesisTag),
}

/// The string `"nemesis"`, so that [`Process`] reads it and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NemesisTag {
    /// The only value.
    Nemesis,
}

impl Process {
    /// The fault injector: `"nemesis"` in a history's `process` field, `nemesis` in text.
    pub const NEMESIS: Process = Process::Nemesis(NemesisTag::Nemesis);

    /// The client number, unless this is the nemesis.
    pub fn client(self) -> Option<u32> {
        match self {
            Process::Client(c) => Some(c),
            Process::Nemesis(_) => None,
        }
    }
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Process::Client(c) => write!(f, "c{c}"),
            Process::Nemesis(_) => write!(f, "nemesis"),
        }
    }
}

/// What an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// Take the lock (`lease_ns` on the invocation, and on `ok` when the lock granted
    /// another; `token` on `ok`; `fail` = not granted).
    Acquire,
    /// Give the lock back (`fail` = the lock said "not yours").
    Release,
    /// Extend the lease (`fail` = not held any more).
    Renew,
    /// The client starts its critical section (a point event).
    Enter,
    /// The client ends its critical section (a point event).
    Leave,
    /// Read the resource (`value` on `ok`).
    Read,
    /// Write the resource (`value` on the invocation; `token` when fenced).
    Write,
    /// Compare-and-set (`value` `[from, to]`, or an inventory CAS object; `fail` = no match).
    Cas,
    /// Take units from a stock (`value` = units, default 1; `fail` = not enough).
    Decrement,
    /// Read a key of a kv map.
    Get,
    /// Overwrite a key of a kv map.
    Put,
    /// Append to a key of a kv map.
    Append,
    /// One command a client sent to a backend server, with its reply: a point event at
    /// the command's call time whose `value` is a [`CommandValue`] (`ok`: a reply came;
    /// `info`: none did, so it may or may not have taken effect). Written when the reply
    /// comes, so it may follow events of later times.
    Command,
    /// A fault or heal by the nemesis (`value` = `{"fault": …, "target": …}`).
    Nemesis,
}

impl OpKind {
    /// The op named `name` in locklab's histories (`acquire`, `read`, …).
    pub fn from_name(name: &str) -> Option<OpKind> {
        serde_json::from_value(Value::String(name.to_string())).ok()
    }

    /// Lock operations, checked against the lock spec.
    pub fn is_lock(self) -> bool {
        matches!(self, OpKind::Acquire | OpKind::Release | OpKind::Renew)
    }

    /// Resource operations, checked against a resource spec.
    pub fn is_resource(self) -> bool {
        matches!(
            self,
            OpKind::Read
                | OpKind::Write
                | OpKind::Cas
                | OpKind::Decrement
                | OpKind::Get
                | OpKind::Put
                | OpKind::Append
        )
    }

    /// Point events that are never paired with a completion.
    pub fn is_point(self) -> bool {
        matches!(
            self,
            OpKind::Enter | OpKind::Leave | OpKind::Nemesis | OpKind::Command
        )
    }
}

/// The op's name as histories spell it (`acquire`, `cas`, …), for messages.
impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(Value::String(name)) => f.write_str(&name),
            _ => write!(f, "{self:?}"),
        }
    }
}

/// The phase's name as histories spell it (`invoke`, `ok`, `fail`, `info`).
impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(Value::String(name)) => f.write_str(&name),
            _ => write!(f, "{self:?}"),
        }
    }
}

/// The `value` of a [`OpKind::Command`] event.
///
/// ```text
/// {"process":0,"op":"command","phase":"ok","time":1200,"key":"lock",
///  "value":{"node":0,"command":{"set":{"key":"lock","value":"c0","nx":true,"px":3000}},"reply":"ok","return":1450},
///  "note":"SET lock c0 NX PX 3000 -> OK"}
/// ```
/// `command` and `reply` are in the vocabulary of the header's backend (`redis`: the
/// commands and replies of `locklab_models::redis::spec`, serialized); `note` is the
/// same exchange as a person would type it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandValue {
    /// Which server the client sent it to: the index of the endpoint in the client's
    /// list (0 for single-server locks; Redlock numbers its nodes). A server reached
    /// through a proxy that follows a failover keeps its index: to the client it is
    /// one server.
    pub node: usize,
    /// The server's id of the session it went over, where the server names sessions
    /// (SQL: `CONNECTION_ID()`, `pg_backend_pid()`; absent for Redis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// The request as the header's backend serializes it (`{"set":{…}}` for Redis), kept as
    /// raw JSON until a check reads it in its backend's spec.
    pub command: Value,
    /// The reply (absent: none came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Value>,
    /// When the reply came, or when the client stopped waiting for it (ns, run clock).
    #[serde(rename = "return")]
    pub return_time: u64,
}

/// Where an operation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The client sent it.
    Invoke,
    /// It took effect, with this result.
    Ok,
    /// It certainly did not take effect.
    Fail,
    /// Unknown: it may or may not have taken effect (a timeout, a crash).
    Info,
}

/// One line of a history after the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Who.
    pub process: Process,
    /// What.
    pub op: OpKind,
    /// Invocation or outcome.
    pub phase: Phase,
    /// Monotonic time in nanoseconds since the run started, one clock for all processes.
    pub time: u64,
    /// The lock name or resource key. Shared: a history names a handful of keys in
    /// millions of events, and the reader gives every event naming one the same text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<std::sync::Arc<str>>,
    /// The operation's argument (on `invoke`) or result (on `ok`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<EventValue>,
    /// The fencing token granted (acquire `ok`) or carried (a fenced write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// The owner identity the lock saw, when it is not simply the process number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<u64>,
    /// The lease asked for, in nanoseconds (acquire and renew invocations); on an
    /// acquire's `ok`, the lease the lock says it granted instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ns: Option<u64>,
    /// Why it failed or is unknown, or any remark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Event {
    /// The `value`, read as JSON data.
    pub fn value_json(&self) -> Option<Value> {
        self.value.as_ref().map(EventValue::json)
    }

    /// A bare event; set the optional fields afterwards.
    pub fn new(process: Process, op: OpKind, phase: Phase, time: u64) -> Self {
        Event {
            process,
            op,
            phase,
            time,
            key: None,
            value: None,
            token: None,
            owner: None,
            lease_ns: None,
            note: None,
        }
    }
}

/// An event's `value`: any JSON, kept as its text until a check reads it.
///
/// A `command` event's value is three nested objects; parsed into a [`Value`], each
/// object is a tree node of ~600 bytes, and the command values of a 170,000-event
/// history took 100 MB. Their text takes a tenth of that, and a check that reads one
/// parses it once into the type it wants ([`EventValue::parse`]).
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventValue(Box<serde_json::value::RawValue>);

impl EventValue {
    /// The value as JSON data.
    pub fn json(&self) -> Value {
        // Never taken for a value read from a history: the JSONL reader refuses one it
        // cannot read back (nested 128 levels or more), and the EDN reader bounds
        // nesting at 128 levels counting the event map's own, so a value is at most
        // 127 deep, which serde_json reads.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The value read as a `T` (a [`CommandValue`], an integer, …).
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The value as JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }
}

impl From<Value> for EventValue {
    fn from(v: Value) -> Self {
        EventValue(serde_json::value::to_raw_value(&v).unwrap_or_else(|_| {
            // A `Value` always serializes; the fallback is never taken.
            serde_json::value::RawValue::NULL.to_owned()
        }))
    }
}

impl From<i64> for EventValue {
    fn from(n: i64) -> Self {
        Value::from(n).into()
    }
}

/// Equal as JSON data, whatever the spacing of the text.
impl PartialEq for EventValue {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.json() == other.json()
    }
}

/// As the JSON text.
impl std::fmt::Display for EventValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// As the JSON text.
impl std::fmt::Debug for EventValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// A whole history: header and events, each event with the line it came from.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Where it came from, for error messages.
    pub source: String,
    /// The first non-blank line, checked: `format` is `locklab-history` and `version` is
    /// one this build reads. Imports make one up.
    pub header: Header,
    /// The events in file order, with their 1-based line numbers.
    pub events: Vec<(usize, Event)>,
    /// Remarks made while reading (a torn last line, say).
    pub warnings: Vec<String>,
    /// The file the `command` events' values and notes are read from when the reader
    /// left them out of `events` ([`crate::reader::read_path_lean`]); `None`: they are in
    /// `events`. A long run's commands are most of its history, and the checks that
    /// read them ([`crate::ops::Paired::each_command`]) need one at a time.
    pub commands_at: Option<std::path::PathBuf>,
}

impl History {
    /// A history made in code from `events` under `header`, numbered as a file would
    /// number them (the header on line 1, the events from line 2).
    pub fn of(source: impl Into<String>, header: Header, events: Vec<Event>) -> History {
        History {
            source: source.into(),
            header,
            events: events
                .into_iter()
                .enumerate()
                .map(|(i, e)| (i + 2, e))
                .collect(),
            warnings: Vec::new(),
            commands_at: None,
        }
    }
}
