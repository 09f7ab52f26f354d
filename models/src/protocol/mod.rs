//! A user's own lock protocol, model-checked like a catalog row: the steps of acquire,
//! release and renew, as commands of a family's spec — for Redis words or Lua scripts
//! run by the spec's embedded Lua ([`redis`]), for etcd requests as data, `Txn`
//! included ([`etcd`]) — and what each reply means.
//!
//! Written as a protocol file ([`load`], TOML, see [`mod@file`]) or with a builder
//! ([`RedisProtocol::builder`], [`EtcdProtocol::builder`]); both are checked the same way when built (every
//! command one the spec runs, every script compiling and calling only such commands),
//! then explored by the family's model under the family's faults ([`check()`]), with the
//! catalog's properties and shortest stories.
//!
//! ```
//! use locklab_models::protocol::{self, RedisProtocol, StepBuilder};
//!
//! let p = RedisProtocol::builder("SET NX PX + plain DEL")
//!     .acquire(StepBuilder::send("SET {key} {token} NX PX {lease_ms}").granted("OK").busy("nil"))
//!     .release(StepBuilder::send("DEL {key}").released("any"))
//!     .build()
//!     .expect("a valid protocol");
//! let described = protocol::Described::Redis(p);
//! let report = protocol::check(&described, "pause", &Default::default(), Default::default())
//!     .expect("pause is a Redis environment");
//! assert!(matches!(report.verdict, locklab_models::catalog::Verdict::Violated(_)));
//! ```

pub mod by_address;
pub mod check;
pub mod etcd;
pub mod file;
pub mod outcome;
pub mod particular;
pub mod redis;
pub mod redlock;

pub use check::{cast_in, check, check_in, progress_in, Environment};
pub use etcd::{EtcdProtocol, EtcdStepBuilder};
pub use file::{load, parse};
pub use outcome::{OnBusy, Operation, Outcome};
pub use redis::steps::TokenKind;
pub use redis::{RedisProtocol, StepBuilder};
pub use redlock::RedlockProtocol;

use crate::registry::Family;
use crate::scenario::Build;

/// A described protocol, by family: the one place that lists the families a protocol
/// may be described in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Described {
    /// A Redis lock.
    Redis(RedisProtocol),
    /// An etcd lock.
    Etcd(EtcdProtocol),
    /// A Redlock over independent Redis nodes.
    Redlock(RedlockProtocol),
}

impl Described {
    /// The families a protocol file may name.
    pub const FAMILIES: &'static [Family] = &[Family::Redis, Family::Redlock, Family::Etcd];

    /// A protocol file of `family` read by that family's reader (`None`: no reader).
    pub fn read(
        family: Family,
        file: &str,
        text: &str,
        read: &dyn Fn(&str) -> Result<String, String>,
    ) -> Option<Result<Described, ProtocolError>> {
        match family {
            Family::Redis => Some(redis::file::parse(file, text, read).map(Described::Redis)),
            Family::Etcd => Some(etcd::file::parse(file, text).map(Described::Etcd)),
            Family::Redlock => Some(redlock::parse(file, text, read).map(Described::Redlock)),
            _ => None,
        }
    }

    /// The environments it is checked in when none is named: no fault, then each of
    /// its family's faults.
    pub fn environments(&self) -> Vec<Environment> {
        match self {
            Described::Redis(p) => redis::check::environments(p),
            Described::Etcd(p) => etcd::check::environments(p),
            Described::Redlock(p) => redlock::check::environments(p),
        }
    }

    /// Its family's model of it, for a scenario.
    pub fn model(&self) -> &'static dyn Build {
        match self {
            Described::Redis(p) => redis::check::model(p),
            Described::Etcd(p) => etcd::check::model(p),
            Described::Redlock(p) => redlock::check::model(p),
        }
    }

    /// The catalog row of its family's sound recipe, which what it breaks is held
    /// against ([`particular`]): the lock the family is best known for, correct while
    /// nothing outside the lock's protocol breaks it.
    pub fn reference(&self) -> &'static str {
        match self {
            Described::Redis(_) => "redis-lua",
            Described::Redlock(_) => "redlock",
            Described::Etcd(_) => "etcd-lease-crash",
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Described::Redis(p) => &p.name,
            Described::Etcd(p) => &p.name,
            Described::Redlock(p) => p.name(),
        }
    }

    /// What may keep its search from closing, said beside an *unknown* verdict: a
    /// retrying acquire of several steps whose first steps write (an `INCR` per try)
    /// changes the keyspace with every refusal, so the search meets new states for
    /// ever unless `attempts` bounds the tries.
    pub fn unknown_hint(&self) -> Option<&'static str> {
        match self {
            Described::Redis(p) => (p.attempts.is_none()
                && p.acquire.len() > 1
                && p.on_busy == OnBusy::Retry)
                .then_some(
                    "if a refused try writes before it is refused (an INCR per try), every retry is a new state and the search cannot close: bound the model's tries with `attempts = N` in the protocol file",
                ),
            Described::Redlock(_) => None,
            Described::Etcd(p) => (p.attempts.is_none() && p.on_busy == OnBusy::Retry).then_some(
                "every write moves etcd's revision on, so a refused try that writes (a put per try, a new lease per try) is a new state and the search cannot close: bound the model's tries with `attempts = N` in the protocol file",
            ),
        }
    }

    /// Its family.
    pub fn family(&self) -> Family {
        match self {
            Described::Redis(_) => Family::Redis,
            Described::Etcd(_) => Family::Etcd,
            Described::Redlock(_) => Family::Redlock,
        }
    }
}

/// What is wrong with a protocol, and where (`file:line`, when known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    /// `file:line`, a file, or empty.
    pub at: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl ProtocolError {
    /// An error at `at` (`file:line`, or empty when not known).
    pub fn at(at: &str, message: String) -> ProtocolError {
        ProtocolError {
            at: at.to_string(),
            message,
        }
    }
}

impl From<String> for ProtocolError {
    fn from(message: String) -> Self {
        ProtocolError::at("", message)
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.at, self.message)
        }
    }
}

impl std::error::Error for ProtocolError {}
