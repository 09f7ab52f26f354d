//! A command's words, as `redis-cli`, a client's wire or a script's `redis.call` send
//! them, read as the spec's command: the one reader that the sniffer, protocol files
//! and the Lua bridge share.

use super::*;

/// The commands [`RedisCommand::from_words`] reads, lowercase. Scripts are not among
/// them: `EVAL` needs its source, which only the caller knows.
pub const SPEC_COMMANDS: &[&str] = &[
    "get", "set", "setnx", "del", "unlink", "expire", "pexpire", "pttl", "exists", "incr",
    "hincrby", "hexists", "wait", "publish",
];

/// Commands whose answer depends on the server's clock or on chance, lowercase. A
/// model explores every outcome of the steps it knows; these it cannot, and a script
/// that calls them is refused rather than checked against one arbitrary answer.
pub const NONDETERMINISTIC: &[&str] = &[
    "time",
    "randomkey",
    "srandmember",
    "spop",
    "lastsave",
    "hrandfield",
    "zrandmember",
];

impl RedisCommand {
    /// The spec's command for `name` (any case) with `args`, or `None` when the spec has
    /// no such command or the arguments do not fit it (`SET k v NX XX`, a count that is
    /// no number, `DEL` of two keys).
    pub fn from_words(name: &str, args: &[String]) -> Option<RedisCommand> {
        use RedisCommand as C;
        let key = || args.first().cloned();
        let n = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
        let name = name.to_ascii_uppercase();
        Some(match (name.as_str(), args.len()) {
            ("GET", 1) => C::Get { key: key()? },
            ("SET", 2..) => set(args)?,
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
            ("PUBLISH", 2) => C::Publish {
                channel: args[0].clone(),
                message: args[1].clone(),
            },
            ("WAIT", 2) => C::Wait {
                numreplicas: u32::try_from(n(0)?).ok()?,
                timeout: n(1)?,
            },
            _ => return None,
        })
    }
}

/// `SET key value [NX|XX] [PX ms|EX s]`; the other options (`GET`, `KEEPTTL`, `EXAT`,
/// `PXAT`) are not the spec's `SET`.
fn set(args: &[String]) -> Option<RedisCommand> {
    let (mut nx, mut xx, mut px) = (false, false, None);
    let n = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let mut i = 2;
    while i < args.len() {
        match args[i].to_ascii_uppercase().as_str() {
            "NX" => nx = true,
            "XX" => xx = true,
            "PX" => {
                px = Some(n(i + 1)?);
                i += 1;
            }
            "EX" => {
                px = Some(n(i + 1)?.checked_mul(1000)?);
                i += 1;
            }
            _ => return None,
        }
        i += 1;
    }
    let (key, value) = (args[0].clone(), args[1].clone());
    Some(match (nx, xx) {
        (true, true) => return None,
        (false, true) => RedisCommand::SetXx { key, value, px },
        (nx, false) => RedisCommand::Set { key, value, nx, px },
    })
}
