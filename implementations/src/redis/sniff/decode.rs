//! A request's words read as the spec's command (what the spec has no word for as
//! [`RedisCommand::Other`]), and a reply as the spec's.

use locklab_models::redis::spec::{RedisCommand, RedisReply};

use super::super::resp::Resp;
use super::super::scripts::LockScript;
use super::super::wire::decode_script;
use super::{Request, ScriptBook};

fn word(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Commands that read only (or touch no data) and are recorded as reads when the spec
/// has no command for them.
const READS: &[&str] = &[
    "GET",
    "MGET",
    "STRLEN",
    "GETRANGE",
    "EXISTS",
    "TTL",
    "PTTL",
    "TYPE",
    "HGET",
    "HGETALL",
    "HMGET",
    "HEXISTS",
    "HLEN",
    "HKEYS",
    "HVALS",
    "KEYS",
    "SCAN",
    "HSCAN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "ZRANGE",
    "ZSCORE",
    "ZCARD",
    "ZRANK",
    "DBSIZE",
    "RANDOMKEY",
    "OBJECT",
    "EXPIRETIME",
    "PEXPIRETIME",
    "EVAL_RO",
    "EVALSHA_RO",
    "WAIT",
    "WAITAOF",
    "DUMP",
];

/// Connection chatter: touches no key.
const CHATTER: &[&str] = &[
    "PING",
    "ECHO",
    "HELLO",
    "AUTH",
    "SELECT",
    "CLIENT",
    "INFO",
    "COMMAND",
    "READONLY",
    "READWRITE",
    "QUIT",
    "RESET",
    "SCRIPT",
    "TIME",
    "CONFIG",
    "ROLE",
    "LASTSAVE",
    "MEMORY",
    "SLOWLOG",
    "LATENCY",
    "WATCH",
    "UNWATCH",
    "SENTINEL",
];

/// What the words of one request are.
pub(super) fn decode_request(words: &[Vec<u8>], scripts: &ScriptBook) -> Request {
    let Some(name) = words.first().map(|w| word(w).to_ascii_uppercase()) else {
        return Request::Chatter;
    };
    let args: Vec<String> = words[1..].iter().map(|w| word(w)).collect();
    let sub = args.first().map(|a| a.to_ascii_uppercase());
    match (name.as_str(), sub.as_deref()) {
        ("MULTI", _) => return Request::Multi,
        ("EXEC", _) => return Request::Exec,
        ("DISCARD", _) => return Request::Discard,
        ("SUBSCRIBE" | "PSUBSCRIBE" | "SSUBSCRIBE" | "MONITOR" | "SYNC" | "PSYNC", _)
        | ("CLIENT", Some("REPLY")) => {
            return Request::Unfollowable(format!("{name} {}", args.join(" ")))
        }
        ("SCRIPT", Some("LOAD")) => {
            if let Some(source) = args.get(1) {
                scripts.learn(source);
            }
            return Request::Chatter;
        }
        (n, _) if CHATTER.contains(&n) => return Request::Chatter,
        _ => {}
    }
    Request::Data(
        spec_command(&name, &args, scripts).unwrap_or_else(|| RedisCommand::Other {
            write: !READS.contains(&name.as_str()),
            name,
            args,
        }),
    )
}

/// The spec's command for a request, when the spec has one.
fn spec_command(name: &str, args: &[String], scripts: &ScriptBook) -> Option<RedisCommand> {
    use RedisCommand as C;
    let key = || args.first().cloned();
    let n = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    Some(match (name, args.len()) {
        ("GET", 1) => C::Get { key: key()? },
        ("SET", 2..) => {
            let (mut nx, mut px) = (false, None);
            let mut i = 2;
            while i < args.len() {
                match args[i].to_ascii_uppercase().as_str() {
                    "NX" => nx = true,
                    "PX" => {
                        px = Some(n(i + 1)?);
                        i += 1;
                    }
                    "EX" => {
                        px = Some(n(i + 1)?.checked_mul(1000)?);
                        i += 1;
                    }
                    // XX, GET, KEEPTTL, EXAT, PXAT: not the spec's SET.
                    _ => return None,
                }
                i += 1;
            }
            C::Set {
                key: key()?,
                value: args[1].clone(),
                nx,
                px,
            }
        }
        ("SETNX", 2) => C::SetNx {
            key: key()?,
            value: args[1].clone(),
        },
        // UNLINK frees the memory later; to every reader the key is gone at once.
        ("DEL" | "UNLINK", 1) => C::Del { key: key()? },
        ("EXPIRE", 2) => C::Expire {
            key: key()?,
            seconds: n(1)?,
        },
        ("PEXPIRE", 2) => C::PExpire {
            key: key()?,
            ms: n(1)?,
        },
        ("PTTL", 1) => C::PTtl { key: key()? },
        ("EXISTS", 1) => C::Exists { key: key()? },
        ("INCR", 1) => C::Incr { key: key()? },
        ("HINCRBY", 3) => C::HIncrBy {
            key: key()?,
            field: args[1].clone(),
            by: args[2].parse().ok()?,
        },
        ("HEXISTS", 2) => C::HExists {
            key: key()?,
            field: args[1].clone(),
        },
        ("WAIT", 2) => C::Wait {
            numreplicas: u32::try_from(n(0)?).ok()?,
            timeout: n(1)?,
        },
        ("EVAL" | "EVALSHA", 2..) => {
            let source = if name == "EVAL" {
                scripts.learn(&args[0]);
                args[0].clone()
            } else {
                scripts.source(&args[0])?
            };
            let count = usize::try_from(n(1)?).ok()?;
            let keys = args.get(2..2 + count)?;
            let argv = &args[2 + count..];
            decode_script(LockScript::recognise(&source)?, keys, argv)?
        }
        _ => return None,
    })
}

/// A reply in the spec's terms; a type the spec has no word for keeps its text.
pub(super) fn decode_reply(reply: Resp) -> RedisReply {
    match reply {
        Resp::Simple(s) if s == "OK" => RedisReply::Ok,
        Resp::Simple(s) | Resp::Text(s) => RedisReply::Bulk(s),
        Resp::Error(e) => RedisReply::Error(e),
        Resp::Integer(i) => RedisReply::Integer(i),
        Resp::Bulk(None) | Resp::Array(None) | Resp::Null => RedisReply::Nil,
        Resp::Bulk(Some(b)) => RedisReply::Bulk(word(&b)),
        Resp::Boolean(b) => RedisReply::Integer(i64::from(b)),
        Resp::Array(Some(items)) | Resp::Aggregate(items) | Resp::Push(items) => {
            RedisReply::Bulk(format!("{items:?}"))
        }
    }
}
