//! Every command the Redis lock clients send, and every reply they get, as data.
//!
//! This is the recording vocabulary, deliberately *not* a second Redis: it says which
//! command went out and what came back, and nothing about what Redis does with it. The
//! meaning lives in the Redis node spec of `locklab-models`; [`super::spec_map`]
//! translates each exchange into the spec's `RedisCommand`/`RedisReply` and replays it.
//! Scripts are named by [`LockScript`], whose Lua source is the one sent.

use std::time::Duration;

use super::scripts::LockScript;

/// A command as the lock clients send it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisCommand {
    /// `GET key`.
    Get {
        /// The key.
        key: String,
    },
    /// `SET key value [NX] [PX ms]`.
    Set {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Only if the key does not exist.
        nx: bool,
        /// Time to live in milliseconds.
        px: Option<u64>,
    },
    /// `SETNX key value` (the old two-command idiom's first half).
    SetNx {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// `EXPIRE key seconds`.
    Expire {
        /// The key.
        key: String,
        /// Time to live in seconds.
        seconds: u64,
    },
    /// `DEL key`.
    Del {
        /// The key.
        key: String,
    },
    /// `EVALSHA`/`EVAL` of one of the lock scripts (recorded once, whichever was used).
    Eval {
        /// Which script.
        script: LockScript,
        /// `KEYS`.
        keys: Vec<String>,
        /// `ARGV`.
        args: Vec<String>,
    },
    /// `WAIT numreplicas timeout`.
    Wait {
        /// Replicas to wait for.
        replicas: u32,
        /// Timeout in milliseconds (0 would block forever; never sent).
        timeout_ms: u64,
    },
}

impl RedisCommand {
    /// `PX` from a lease, at least 1 ms (Redis refuses 0).
    pub fn px(lease: Duration) -> u64 {
        u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// The command as `redis-cli` would show it.
    pub fn render(&self) -> String {
        match self {
            RedisCommand::Get { key } => format!("GET {key}"),
            RedisCommand::Set { key, value, nx, px } => {
                let mut s = format!("SET {key} {value}");
                if *nx {
                    s.push_str(" NX");
                }
                if let Some(px) = px {
                    s.push_str(&format!(" PX {px}"));
                }
                s
            }
            RedisCommand::SetNx { key, value } => format!("SETNX {key} {value}"),
            RedisCommand::Expire { key, seconds } => format!("EXPIRE {key} {seconds}"),
            RedisCommand::Del { key } => format!("DEL {key}"),
            RedisCommand::Eval { script, keys, args } => {
                format!(
                    "EVAL <{}> {} {} {}",
                    script.name(),
                    keys.len(),
                    keys.join(" "),
                    args.join(" ")
                )
            }
            RedisCommand::Wait {
                replicas,
                timeout_ms,
            } => format!("WAIT {replicas} {timeout_ms}"),
        }
    }
}

/// A reply, reduced to what the lock protocols distinguish.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisReply {
    /// Nil (`(nil)`).
    Nil,
    /// `OK`.
    Ok,
    /// An integer.
    Int(i64),
    /// A bulk or status string (lossy UTF-8).
    Str(String),
    /// An array (not sent by any lock command; kept for completeness).
    Array(Vec<RedisReply>),
    /// An error reply from the server (`ERR …`, `NOSCRIPT`, `READONLY` …).
    Error(String),
}

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
    /// When it was sent, in ns since the recorder was created.
    pub sent_ns: u64,
    /// When the reply (or the failure) came, in ns since the recorder was created.
    pub done_ns: u64,
}
