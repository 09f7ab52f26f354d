//! How the spec's commands go on the wire and how replies come back into its terms.
//!
//! The commands are the spec's (`locklab_models::redis::spec`): what each one does is
//! written there alone. What only a client knows is here: the argument order of each
//! command, and which Lua source, with which `KEYS` and `ARGV`, each script command is.

use locklab_models::redis::spec::{lua, RedisCommand, RedisReply};
use redis::{Cmd, Value};
use std::sync::Arc;

use super::scripts::LockScript;

/// A command ready to send.
pub(crate) enum Wire {
    /// A plain command.
    Plain(Cmd),
    /// A script, sent by hash or by source.
    Script(ScriptCall),
}

/// A script: one the spec names by its role, or a user's, known by its SHA1 to the
/// spec's script book.
enum Script {
    Lock(LockScript),
    User { sha: String, source: Arc<str> },
}

/// One evaluation of a script.
pub(crate) struct ScriptCall {
    script: Script,
    keys: Vec<String>,
    args: Vec<String>,
}

impl ScriptCall {
    fn wire(script: LockScript, keys: &[&str], args: Vec<String>) -> Wire {
        Wire::Script(ScriptCall {
            script: Script::Lock(script),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            args,
        })
    }

    /// `EVALSHA sha n KEYS… ARGV…` (`NOSCRIPT` until the server has seen the source).
    pub(crate) fn evalsha(&self) -> Cmd {
        match &self.script {
            Script::Lock(s) => self.with("EVALSHA", s.sha()),
            Script::User { sha, .. } => self.with("EVALSHA", sha),
        }
    }

    /// `EVAL source n KEYS… ARGV…`.
    pub(crate) fn eval(&self) -> Cmd {
        match &self.script {
            Script::Lock(s) => self.with("EVAL", s.source()),
            Script::User { source, .. } => self.with("EVAL", source),
        }
    }

    fn with(&self, name: &str, script: &str) -> Cmd {
        let mut c = redis::cmd(name);
        c.arg(script)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        c
    }
}

fn plain(name: &str, args: &[String]) -> Wire {
    let mut c = redis::cmd(name);
    c.arg(args);
    Wire::Plain(c)
}

/// The wire form of `command`.
pub(crate) fn encode(command: &RedisCommand) -> Wire {
    use RedisCommand as C;
    let s = |v: &str| v.to_string();
    match command {
        C::Get { key } => plain("GET", &[s(key)]),
        C::Set { key, value, nx, px } => {
            let mut args = vec![s(key), s(value)];
            if *nx {
                args.push(s("NX"));
            }
            if let Some(px) = px {
                args.extend([s("PX"), px.to_string()]);
            }
            plain("SET", &args)
        }
        C::SetXx { key, value, px } => {
            let mut args = vec![s(key), s(value), s("XX")];
            if let Some(px) = px {
                args.extend([s("PX"), px.to_string()]);
            }
            plain("SET", &args)
        }
        C::SetNx { key, value } => plain("SETNX", &[s(key), s(value)]),
        C::Publish { channel, message } => plain("PUBLISH", &[s(channel), s(message)]),
        C::Eval { sha, keys, args } => match lua::source(sha) {
            // By hash, with the source at hand for a server that answers NOSCRIPT.
            Some(source) => Wire::Script(ScriptCall {
                script: Script::User {
                    sha: sha.clone(),
                    source,
                },
                keys: keys.clone(),
                args: args.clone(),
            }),
            None => {
                let mut words = vec![s(sha), keys.len().to_string()];
                words.extend(keys.iter().chain(args).cloned());
                plain("EVALSHA", &words)
            }
        },
        C::Del { key } => plain("DEL", &[s(key)]),
        C::Expire { key, seconds } => plain("EXPIRE", &[s(key), seconds.to_string()]),
        C::PExpire { key, ms } => plain("PEXPIRE", &[s(key), ms.to_string()]),
        C::PTtl { key } => plain("PTTL", &[s(key)]),
        C::Exists { key } => plain("EXISTS", &[s(key)]),
        C::Incr { key } => plain("INCR", &[s(key)]),
        C::HIncrBy { key, field, by } => plain("HINCRBY", &[s(key), s(field), by.to_string()]),
        C::HExists { key, field } => plain("HEXISTS", &[s(key), s(field)]),
        // A timeout of 0 would block forever: never sent.
        C::Wait {
            numreplicas,
            timeout,
        } => plain(
            "WAIT",
            &[numreplicas.to_string(), (*timeout).max(1).to_string()],
        ),
        C::EvalCompareAndDelete { key, value } => {
            ScriptCall::wire(LockScript::CompareAndDelete, &[key], vec![s(value)])
        }
        C::EvalCompareAndRenew { key, value, px } => ScriptCall::wire(
            LockScript::CompareAndPexpire,
            &[key],
            vec![s(value), px.to_string()],
        ),
        C::EvalCompareAndTransfer { key, value, to, px } => ScriptCall::wire(
            LockScript::CompareAndTransfer,
            &[key],
            vec![s(value), s(to), px.to_string()],
        ),
        C::EvalFencedAcquire {
            key,
            fence,
            value,
            px,
        } => ScriptCall::wire(
            LockScript::FencedAcquire,
            &[key, fence],
            vec![s(value), px.to_string()],
        ),
        C::EvalRedissonLock { key, field, px } => ScriptCall::wire(
            LockScript::HashAcquire,
            &[key],
            vec![px.to_string(), s(field)],
        ),
        C::EvalRedissonUnlock { key, field, px } => ScriptCall::wire(
            LockScript::HashRelease,
            &[key],
            vec![px.to_string(), s(field)],
        ),
        C::EvalRedissonRenew { key, field, px } => ScriptCall::wire(
            LockScript::HashRenew,
            &[key],
            vec![px.to_string(), s(field)],
        ),
        C::Other { name, args, .. } => plain(name, args),
    }
}

/// The spec's command that a run of `script` with `keys` and `args` is (the inverse of
/// [`encode`]'s scripts), or `None` when they do not fit it.
pub(crate) fn decode_script(
    script: LockScript,
    keys: &[String],
    args: &[String],
) -> Option<RedisCommand> {
    use RedisCommand as C;
    let k = |i: usize| keys.get(i).cloned();
    let a = |i: usize| args.get(i).cloned();
    let n = |i: usize| args.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(match script {
        LockScript::CompareAndDelete => C::EvalCompareAndDelete {
            key: k(0)?,
            value: a(0)?,
        },
        LockScript::CompareAndPexpire => C::EvalCompareAndRenew {
            key: k(0)?,
            value: a(0)?,
            px: n(1)?,
        },
        LockScript::CompareAndTransfer => C::EvalCompareAndTransfer {
            key: k(0)?,
            value: a(0)?,
            to: a(1)?,
            px: n(2)?,
        },
        LockScript::FencedAcquire => C::EvalFencedAcquire {
            key: k(0)?,
            fence: k(1)?,
            value: a(0)?,
            px: n(1)?,
        },
        LockScript::HashAcquire => C::EvalRedissonLock {
            key: k(0)?,
            field: a(1)?,
            px: n(0)?,
        },
        LockScript::HashRelease => C::EvalRedissonUnlock {
            key: k(0)?,
            field: a(1)?,
            px: n(0)?,
        },
        LockScript::HashRenew => C::EvalRedissonRenew {
            key: k(0)?,
            field: a(1)?,
            px: n(0)?,
        },
    })
}

/// The reply in the spec's terms. Lock commands answer with nil, `OK`, integers, bulk
/// strings and errors only; any other type is a server answering outside the
/// protocol, kept as an error reply that names it.
pub(crate) fn decode(v: Value) -> RedisReply {
    match v {
        Value::Nil => RedisReply::Nil,
        Value::Okay => RedisReply::Ok,
        Value::Int(i) => RedisReply::Integer(i),
        Value::BulkString(b) => RedisReply::Bulk(String::from_utf8_lossy(&b).into_owned()),
        Value::SimpleString(s) if s == "OK" => RedisReply::Ok,
        Value::SimpleString(s) => RedisReply::Bulk(s),
        Value::Boolean(b) => RedisReply::Integer(i64::from(b)),
        Value::Array(items) => RedisReply::Array(items.into_iter().map(decode).collect()),
        Value::ServerError(e) => RedisReply::Error(
            format!("{} {}", e.code(), e.details().unwrap_or(""))
                .trim()
                .to_string(),
        ),
        other => RedisReply::Error(format!("unexpected reply {other:?}")),
    }
}
