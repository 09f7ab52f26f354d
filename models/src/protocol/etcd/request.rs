//! An etcd request with placeholders, kept as the TOML a protocol file wrote it in and
//! read as an [`EtcdCommand`] (the history's own serde vocabulary) once filled.

use serde::Deserialize;

use crate::etcd::spec::{EtcdCommand, LeaseId};

use super::PLACEHOLDERS;

/// What a placeholder stands for when a request is sent.
#[derive(Clone, Copy, Debug)]
pub struct EtcdFill<'a> {
    /// `{key}`: the lock's key.
    pub key: &'a str,
    /// `{token}`: the client's identity (`c0`, `c1`, … in a model).
    pub token: &'a str,
    /// `{lease}`: the client's session lease.
    pub lease: LeaseId,
    /// `{rev}`: the revision of the last put the client's current acquire made (0
    /// before one): the key's create revision where the put created it.
    pub rev: u64,
}

impl EtcdFill<'_> {
    /// What a request is checked with when it is built.
    pub const PROBE: EtcdFill<'static> = EtcdFill {
        key: "lock",
        token: "c0",
        lease: 1,
        rev: 1,
    };
}

/// A request as written: TOML values whose strings may hold placeholders. A string
/// that is a numeric placeholder alone (`"{lease}"`, `"{rev}"`) stands for the number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// A string.
    Text(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array.
    List(Vec<Request>),
    /// A table, in the order written.
    Table(Vec<(String, Request)>),
}

impl Request {
    /// The request a TOML value writes (floats and dates, which no request has, are
    /// kept as text and refused when read).
    pub fn of(v: &toml::Value) -> Request {
        match v {
            toml::Value::String(s) => Request::Text(s.clone()),
            toml::Value::Integer(n) => Request::Int(*n),
            toml::Value::Boolean(b) => Request::Bool(*b),
            toml::Value::Array(a) => Request::List(a.iter().map(Request::of).collect()),
            toml::Value::Table(t) => {
                Request::Table(t.iter().map(|(k, v)| (k.clone(), Request::of(v))).collect())
            }
            toml::Value::Float(f) => Request::Text(f.to_string()),
            toml::Value::Datetime(d) => Request::Text(d.to_string()),
        }
    }

    fn value(&self, f: &EtcdFill<'_>) -> toml::Value {
        match self {
            Request::Text(s) if s == "{lease}" => toml::Value::Integer(f.lease),
            Request::Text(s) if s == "{rev}" => {
                toml::Value::Integer(i64::try_from(f.rev).unwrap_or(i64::MAX))
            }
            Request::Text(s) => toml::Value::String(fill(s, f)),
            Request::Int(n) => toml::Value::Integer(*n),
            Request::Bool(b) => toml::Value::Boolean(*b),
            Request::List(l) => toml::Value::Array(l.iter().map(|r| r.value(f)).collect()),
            Request::Table(t) => {
                toml::Value::Table(t.iter().map(|(k, r)| (k.clone(), r.value(f))).collect())
            }
        }
    }

    /// The request with every placeholder filled, or what keeps it from being one.
    pub fn command(&self, f: &EtcdFill<'_>) -> Result<EtcdCommand, String> {
        EtcdCommand::deserialize(self.value(f)).map_err(|e| {
            format!(
                "not an etcd request: {} (write one of get, put, delete, txn, first-create, last-create-before, revoke, as run histories do)",
                e.message().trim()
            )
        })
    }

    fn texts(&self) -> Vec<&str> {
        match self {
            Request::Text(s) => vec![s.as_str()],
            Request::List(l) => l.iter().flat_map(Request::texts).collect(),
            Request::Table(t) => t.iter().flat_map(|(_, r)| r.texts()).collect(),
            Request::Int(_) | Request::Bool(_) => Vec::new(),
        }
    }

    /// Whether a string uses `placeholder`.
    pub fn uses(&self, placeholder: &str) -> bool {
        self.texts().iter().any(|t| t.contains(placeholder))
    }

    /// The first `{…}` that is no placeholder, if any.
    pub fn unknown_placeholder(&self) -> Option<String> {
        self.texts().into_iter().find_map(|t| {
            let mut rest = t;
            while let Some(open) = rest.find('{') {
                let close = rest[open..].find('}').map(|c| open + c + 1)?;
                let p = &rest[open..close];
                if !PLACEHOLDERS.contains(&p) {
                    return Some(p.to_string());
                }
                rest = &rest[close..];
            }
            None
        })
    }
}

fn fill(s: &str, f: &EtcdFill<'_>) -> String {
    if !s.contains('{') {
        return s.to_string();
    }
    s.replace("{key}", f.key)
        .replace("{token}", f.token)
        .replace("{lease}", &f.lease.to_string())
        .replace("{rev}", &f.rev.to_string())
}

/// The request's name as a file writes it.
pub fn kind(cmd: &EtcdCommand) -> &'static str {
    match cmd {
        EtcdCommand::Grant { .. } => "grant",
        EtcdCommand::KeepAlive { .. } => "keep-alive",
        EtcdCommand::Revoke { .. } => "revoke",
        EtcdCommand::Get { .. } => "get",
        EtcdCommand::FirstCreate { .. } => "first-create",
        EtcdCommand::LastCreateBefore { .. } => "last-create-before",
        EtcdCommand::Put { .. } => "put",
        EtcdCommand::Delete { .. } => "delete",
        EtcdCommand::Lock { .. } => "lock",
        EtcdCommand::Unlock { .. } => "unlock",
        EtcdCommand::Txn { .. } => "txn",
    }
}

/// Whether a protocol step may send `cmd`: the session's lease requests are the
/// session's, the `Lock` RPC is a catalog row of its own, and a `Txn` holds only
/// key requests (etcd refuses lease requests inside one).
pub fn allowed(cmd: &EtcdCommand) -> Result<(), String> {
    match cmd {
        EtcdCommand::Grant { .. } | EtcdCommand::KeepAlive { .. } => Err(format!(
            "`{}`: the session takes and keeps the lease; write `lease = true` and use `{{lease}}`",
            kind(cmd)
        )),
        EtcdCommand::Lock { .. } | EtcdCommand::Unlock { .. } => Err(format!(
            "`{}` is etcd's server-side Lock RPC (the catalog's etcd-lock-* rows): describe the keys it writes instead",
            kind(cmd)
        )),
        EtcdCommand::Txn {
            success, failure, ..
        } => match success.iter().chain(failure).find(|c| {
            !matches!(
                c,
                EtcdCommand::Get { .. }
                    | EtcdCommand::FirstCreate { .. }
                    | EtcdCommand::LastCreateBefore { .. }
                    | EtcdCommand::Put { .. }
                    | EtcdCommand::Delete { .. }
            )
        }) {
            Some(c) => Err(format!(
                "a txn holds get, put, delete, first-create and last-create-before; not `{}`",
                kind(c)
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Whether `cmd` writes a key with a put (alone or in either branch of a `Txn`).
pub fn puts(cmd: &EtcdCommand) -> bool {
    match cmd {
        EtcdCommand::Put { .. } => true,
        EtcdCommand::Txn {
            success, failure, ..
        } => success.iter().chain(failure).any(puts),
        _ => false,
    }
}
