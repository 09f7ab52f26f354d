//! A request's words read as the spec's command (what the spec has no word for as
//! [`RedisCommand::Other`]), and a reply as the spec's.

use locklab_models::redis::spec::{lua, RedisCommand, RedisReply};

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

/// The spec's command for a request, when the spec has one: a script by its role when
/// it is one of the lock scripts the spec names, else run by the spec's own Lua.
fn spec_command(name: &str, args: &[String], scripts: &ScriptBook) -> Option<RedisCommand> {
    if !matches!(name, "EVAL" | "EVALSHA") {
        return RedisCommand::from_words(name, args);
    }
    let first = args.first()?;
    let source = if name == "EVAL" {
        scripts.learn(first);
        first.clone()
    } else {
        scripts.source(first)?
    };
    let count = usize::try_from(args.get(1)?.parse::<u64>().ok()?).ok()?;
    let keys = args.get(2..2 + count)?;
    let argv = &args[2 + count..];
    match LockScript::recognise(&source) {
        Some(script) => decode_script(script, keys, argv),
        None => Some(RedisCommand::Eval {
            sha: lua::register(&source),
            keys: keys.to_vec(),
            args: argv.to_vec(),
        }),
    }
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
            RedisReply::Array(items.into_iter().map(decode_reply).collect())
        }
    }
}
