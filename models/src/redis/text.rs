//! How Redis commands, replies and keys read in stories, notes and recorded
//! histories: commands as typed (scripts by their role), replies as `redis-cli` shows
//! them.

use std::fmt;

use super::spec::{RedisCommand, RedisReply, RedisState, Value};

/// The command as a person would type it (scripts by their role).
pub fn command_text(cmd: &RedisCommand) -> String {
    use RedisCommand::*;
    match cmd {
        Get { key } => format!("GET {key}"),
        Set { key, value, nx, px } => {
            let nx = if *nx { " NX" } else { "" };
            let px = px.map(|p| format!(" PX {p}")).unwrap_or_default();
            format!("SET {key} {value}{nx}{px}")
        }
        SetXx { key, value, px } => {
            let px = px.map(|p| format!(" PX {p}")).unwrap_or_default();
            format!("SET {key} {value} XX{px}")
        }
        SetNx { key, value } => format!("SETNX {key} {value}"),
        Publish { channel, message } => format!("PUBLISH {channel} {message}"),
        Del { key } => format!("DEL {key}"),
        Expire { key, seconds } => format!("EXPIRE {key} {seconds}"),
        PExpire { key, ms } => format!("PEXPIRE {key} {ms}"),
        PTtl { key } => format!("PTTL {key}"),
        Exists { key } => format!("EXISTS {key}"),
        Incr { key } => format!("INCR {key}"),
        HIncrBy { key, field, by } => format!("HINCRBY {key} {field} {by}"),
        HExists { key, field } => format!("HEXISTS {key} {field}"),
        Wait {
            numreplicas,
            timeout,
        } => format!("WAIT {numreplicas} {timeout}"),
        EvalCompareAndDelete { key, value } => format!("EVAL compare-and-delete {key} {value}"),
        EvalCompareAndRenew { key, value, px } => {
            format!("EVAL compare-and-renew {key} {value} {px}")
        }
        EvalCompareAndTransfer { key, value, to, px } => {
            format!("EVAL compare-and-transfer {key} {value} {to} {px}")
        }
        EvalFencedAcquire {
            key,
            fence,
            value,
            px,
        } => format!("EVAL fenced-acquire {key} {fence} {value} {px}"),
        EvalRedissonLock { key, field, px } => format!("EVAL redisson-lock {key} {field} {px}"),
        EvalRedissonUnlock { key, field, px } => format!("EVAL redisson-unlock {key} {field} {px}"),
        EvalRedissonRenew { key, field, px } => format!("EVAL redisson-renew {key} {field} {px}"),
        Eval { sha, keys, args } => {
            let mut text = format!("EVALSHA {} {}", &sha[..sha.len().min(8)], keys.len());
            for w in keys.iter().chain(args) {
                text.push(' ');
                text.push_str(w);
            }
            text
        }
        Other { name, args, .. } => {
            let mut text = name.clone();
            for a in args {
                text.push(' ');
                text.push_str(a);
            }
            text
        }
    }
}

/// The reply as `redis-cli` shows it.
pub fn reply_text(reply: &RedisReply) -> String {
    match reply {
        RedisReply::Ok => "OK".into(),
        RedisReply::Nil => "(nil)".into(),
        RedisReply::Integer(n) => format!("(integer) {n}"),
        RedisReply::Bulk(s) => format!("\"{s}\""),
        RedisReply::Error(e) => format!("(error) {e}"),
        RedisReply::Array(items) => {
            let items: Vec<String> = items.iter().map(reply_text).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

impl fmt::Display for RedisCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&command_text(self))
    }
}

impl fmt::Display for RedisReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&reply_text(self))
    }
}

/// A key's value as a short text, for stories: `"c0"`, `{c0:2}`, or `-`.
pub fn entry_text(state: &RedisState, key: &str, now: u64) -> String {
    entry_text_with(state, key, now, |t| format!("t={t}"))
}

/// [`entry_text`] with the lease's deadline told by `time` (a story counts ticks, a
/// recorded history seconds).
pub fn entry_text_with(
    state: &RedisState,
    key: &str,
    now: u64,
    time: impl Fn(u64) -> String,
) -> String {
    let Some(e) = state.live(key, now) else {
        return "-".into();
    };
    let v = match &e.value {
        Value::Str(s) => format!("\"{s}\""),
        Value::Hash(h) => {
            let fields: Vec<String> = h.iter().map(|(f, n)| format!("{f}:{n}")).collect();
            format!("{{{}}}", fields.join(","))
        }
    };
    match e.deadline {
        Some(d) => format!("{v} until {}", time(d.lo)),
        None => format!("{v} (no TTL)"),
    }
}
