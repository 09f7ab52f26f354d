//! The messages of the external-client protocol (`jepsen-like/CLIENT-PROTOCOL.md`): what
//! locklab writes to a client's stdin, and how a line the client writes to its stdout is
//! read — a reply, or one of the ways a line can be wrong.

use locklab_models::registry::Backend;
use serde::Serialize;
use serde_json::Value;

use super::endpoints::ExternalEndpoints;

/// The protocol version this harness speaks: 2 added `version` to `init` and
/// `lease_ms` to an acquire's `ok`; a version-1 client works unchanged.
pub const VERSION: u32 = 2;

/// A request, one JSON object per line on the client's stdin.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request<'a> {
    /// The first message: who the client is and where the lock servers are.
    Init {
        /// Request id (always 0).
        id: u64,
        /// The protocol's version ([`VERSION`]); a client written for an older one
        /// keeps working (it ignores the fields it does not know).
        version: u32,
        /// The client's name in the history (`c0`).
        client: &'a str,
        /// Its number.
        index: u32,
        /// The family's backend (`redis`, `zookeeper`, …).
        backend: Backend,
        /// The lock servers.
        endpoints: &'a ExternalEndpoints,
        /// The lock name.
        lock: &'a str,
        /// The scenario's lease (ms): a session-bound lock's session timeout.
        lease_ms: u64,
    },
    /// Take the lock.
    Acquire {
        /// Request id.
        id: u64,
        /// The lock name.
        lock: &'a str,
        /// How long the client may wait for a busy lock (ms; 0: one try).
        wait_ms: u64,
        /// The lease to ask for (ms); `null`: none (held until released).
        lease_ms: Option<u64>,
    },
    /// Give the lock back.
    Release {
        /// Request id.
        id: u64,
        /// The lock name.
        lock: &'a str,
    },
    /// Extend the lease to `lease_ms` from now.
    Renew {
        /// Request id.
        id: u64,
        /// The lock name.
        lock: &'a str,
        /// The new lease (ms).
        lease_ms: u64,
    },
}

impl Request<'_> {
    /// The request's id.
    pub fn id(&self) -> u64 {
        match self {
            Request::Init { id, .. }
            | Request::Acquire { id, .. }
            | Request::Release { id, .. }
            | Request::Renew { id, .. } => *id,
        }
    }

    /// Its `type`, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Init { .. } => "init",
            Request::Acquire { .. } => "acquire",
            Request::Release { .. } => "release",
            Request::Renew { .. } => "renew",
        }
    }
}

/// What a reply says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It took effect (acquire: granted; release, renew: done).
    Ok,
    /// The lock service refused and nothing changed (acquire: busy; release, renew: the
    /// lock is not held by this client).
    Refused,
    /// The client does not know what happened (no answer from its server, an
    /// exception): recorded as `info`.
    Error,
}

/// A well-formed reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The request it answers.
    pub id: u64,
    /// What happened.
    pub outcome: Outcome,
    /// The fencing token of a grant.
    pub token: Option<u64>,
    /// The lease the lock really granted (ms), when the client says so (version 2).
    pub lease_ms: Option<u64>,
    /// The client's words (`error`, else `reason`).
    pub message: Option<String>,
    /// The lock's name, for reports (init only).
    pub name: Option<String>,
}

/// A line from the client's stdout, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// Nothing on it: ignored.
    Blank,
    /// A JSON object with an `id` and a `type` of `ok`, `refused` or `error`; whether that
    /// id was ever asked is for the caller to check.
    Reply(Reply),
    /// Not JSON (or not UTF-8).
    NotJson(String),
    /// JSON, but not a reply; `id` when it names one.
    Malformed {
        /// The id, when the line has a usable one.
        id: Option<u64>,
        /// What is wrong.
        why: String,
    },
}

/// Reads one line the client wrote. Fields the protocol does not name are ignored, so a
/// client may add its own.
pub fn read_line(bytes: &[u8]) -> Line {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Line::NotJson("not UTF-8".into());
    };
    let text = text.trim();
    if text.is_empty() {
        return Line::Blank;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Line::NotJson(e.to_string()),
    };
    let Some(object) = value.as_object() else {
        return Line::Malformed {
            id: None,
            why: "a reply is a JSON object".into(),
        };
    };
    let Some(id) = object.get("id").and_then(Value::as_u64) else {
        return Line::Malformed {
            id: None,
            why: "no \"id\" (a non-negative integer: the id of the request it answers)".into(),
        };
    };
    let malformed = |why: String| Line::Malformed { id: Some(id), why };
    let outcome = match object.get("type").and_then(Value::as_str) {
        Some("ok") => Outcome::Ok,
        Some("refused") => Outcome::Refused,
        Some("error") => Outcome::Error,
        Some(other) => {
            return malformed(format!(
                "\"type\" is {other:?}; a reply's type is \"ok\", \"refused\" or \"error\""
            ))
        }
        None => return malformed("no \"type\" (\"ok\", \"refused\" or \"error\")".into()),
    };
    let token = match object.get("token") {
        None | Some(Value::Null) => None,
        Some(t) => match t.as_u64() {
            Some(t) => Some(t),
            None => {
                return malformed(format!(
                    "\"token\" is {t}; a fencing token is a non-negative integer"
                ))
            }
        },
    };
    let lease_ms = match object.get("lease_ms") {
        None | Some(Value::Null) => None,
        Some(l) => match l.as_u64() {
            Some(l) if l > 0 => Some(l),
            _ => {
                return malformed(format!(
                    "\"lease_ms\" is {l}; the lease granted is a positive integer of milliseconds"
                ))
            }
        },
    };
    let text_of = |field: &str| object.get(field).and_then(Value::as_str).map(String::from);
    Line::Reply(Reply {
        id,
        outcome,
        token,
        lease_ms,
        message: text_of("error").or_else(|| text_of("reason")),
        name: text_of("name"),
    })
}

/// At most `max` characters of `text`, marked when cut, for notes and reports.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Reply {
        match read_line(line.as_bytes()) {
            Line::Reply(r) => r,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn replies_are_read_with_their_token_and_words() {
        let r = reply(r#"{"id":3,"type":"ok","token":17,"extra":[1]}"#);
        assert_eq!((r.id, r.outcome, r.token), (3, Outcome::Ok, Some(17)));
        assert_eq!(r.lease_ms, None, "version 1: the lease asked for");
        let r = reply(r#"{"id":3,"type":"ok","lease_ms":1000}"#);
        assert_eq!(r.lease_ms, Some(1000));
        let r = reply(r#"{"id":4,"type":"refused","reason":"busy"}"#);
        assert_eq!(r.outcome, Outcome::Refused);
        assert_eq!(r.message.as_deref(), Some("busy"));
        let r = reply(r#"{"id":5,"type":"error","error":"ConnectionError"}"#);
        assert_eq!(r.outcome, Outcome::Error);
        assert_eq!(r.message.as_deref(), Some("ConnectionError"));
        assert_eq!(read_line(b"  \r"), Line::Blank);
    }

    #[test]
    fn a_bad_line_says_what_is_wrong_and_keeps_the_id_it_names() {
        assert!(matches!(read_line(b"hello"), Line::NotJson(_)));
        assert!(matches!(read_line(&[0xff, 0xfe]), Line::NotJson(_)));
        assert!(matches!(
            read_line(b"[1,2]"),
            Line::Malformed { id: None, .. }
        ));
        assert!(matches!(
            read_line(br#"{"type":"ok"}"#),
            Line::Malformed { id: None, .. }
        ));
        let Line::Malformed { id, why } = read_line(br#"{"id":2,"type":"maybe"}"#) else {
            panic!("malformed")
        };
        assert_eq!(id, Some(2));
        assert!(why.contains("maybe"), "{why}");
        let Line::Malformed { id, why } = read_line(br#"{"id":2,"type":"ok","token":-1}"#) else {
            panic!("malformed")
        };
        assert_eq!(id, Some(2));
        assert!(why.contains("token"), "{why}");
        for bad in [
            r#"{"id":2,"type":"ok","lease_ms":0}"#,
            r#"{"id":2,"type":"ok","lease_ms":"1s"}"#,
        ] {
            let Line::Malformed { why, .. } = read_line(bad.as_bytes()) else {
                panic!("malformed: {bad}")
            };
            assert!(why.contains("lease_ms"), "{why}");
        }
    }

    #[test]
    fn requests_are_written_as_the_spec_spells_them() {
        let endpoints = ExternalEndpoints {
            backend: Backend::Redis,
            redis: vec!["127.0.0.1:1".into()],
            ..ExternalEndpoints::default()
        };
        let init = Request::Init {
            id: 0,
            version: VERSION,
            client: "c0",
            index: 0,
            backend: Backend::Redis,
            endpoints: &endpoints,
            lock: "l",
            lease_ms: 500,
        };
        let v = serde_json::to_value(&init).expect("json");
        assert_eq!(v["type"], "init");
        assert_eq!(v["version"], 2);
        assert_eq!(v["endpoints"]["redis"][0], "127.0.0.1:1");
        assert!(v["endpoints"].get("sentinels").is_none());
        let a = Request::Acquire {
            id: 1,
            lock: "l",
            wait_ms: 0,
            lease_ms: None,
        };
        let v = serde_json::to_value(&a).expect("json");
        assert_eq!(v["type"], "acquire");
        assert_eq!(v["lease_ms"], Value::Null);
        assert_eq!(excerpt("abcdef", 3), "abc…");
        assert_eq!(excerpt("abc", 3), "abc");
    }
}
