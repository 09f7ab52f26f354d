//! The commands lock clients send and the replies they get, as RESP types: the one
//! vocabulary of Redis commands the models, histories and real clients share.

use super::*;

/// A command a client sends, named after the Redis command or the script it evaluates.
/// Durations are milliseconds (seconds for [`RedisCommand::Expire`]).
///
/// This is the one vocabulary of Redis commands: the real clients send exactly these
/// (each script's Lua source and argument order is theirs to know), record them, and
/// run histories carry them as `command` events (serialized in kebab case:
/// `{"set":{"key":"lock","value":"c0","nx":true,"px":1000}}`). [`Display`](std::fmt::Display) prints
/// one as a person would type it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum RedisCommand {
    /// `GET key` → bulk string or nil (`WRONGTYPE` on a hash).
    Get {
        /// The key read; an expired key reads as missing.
        key: String,
    },
    /// `SET key value [NX] [PX ms]` → `OK`, or nil when `NX` finds the key live.
    Set {
        /// The key written, whatever it held (string or hash); for a lock, the lock's name.
        key: String,
        /// The string stored; a lock client writes its owner token, which release compares.
        value: String,
        /// Only if the key does not exist.
        nx: bool,
        /// Deadline in ms from now; `None` makes the key persistent.
        px: Option<u64>,
    },
    /// `SET key value XX [PX ms]` → `OK` when the key was live (and is now set), nil
    /// when it was not: set only if present, the opposite of `NX` (what Spring's
    /// `setIfPresent` sends).
    SetXx {
        /// The key overwritten only if live; an expired key counts as absent.
        key: String,
        /// The string that replaces the live one (a renewer writes its own token again).
        value: String,
        /// Deadline in ms from now; `None` makes the key persistent.
        px: Option<u64>,
    },
    /// `SETNX key value` → `1` when set, `0` when the key was live.
    SetNx {
        /// The key created only if absent or expired.
        key: String,
        /// The string stored, with no deadline: `SETNX` takes none, so a crashed holder's
        /// key stays until someone deletes it.
        value: String,
    },
    /// `DEL key` → number of keys removed (0 or 1).
    Del {
        /// The key removed, string or hash, whoever wrote it (no owner check).
        key: String,
    },
    /// `EXPIRE key seconds` → `1` when the key exists, else `0`.
    Expire {
        /// The key given a new deadline in place of any old one; a missing key is not made.
        key: String,
        /// Seconds from now.
        seconds: u64,
    },
    /// `PEXPIRE key ms` → `1` when the key exists, else `0`.
    PExpire {
        /// The key given a new deadline, replacing any old one (how `SETNX` + `PEXPIRE`
        /// sets its lease); a missing or expired key is not created.
        key: String,
        /// Milliseconds from now.
        ms: u64,
    },
    /// `PTTL key` → ms left, `-1` without deadline, `-2` when missing.
    PTtl {
        /// The key whose remaining lease is read; an expired key counts as missing (`-2`).
        key: String,
    },
    /// `EXISTS key` → 1 or 0.
    Exists {
        /// The key tested; an expired key counts as absent.
        key: String,
    },
    /// `INCR key` → the incremented integer (a fencing token counter).
    Incr {
        /// The counter: a decimal string, 0 when missing; its deadline, if any, is kept.
        key: String,
    },
    /// `HINCRBY key field by` → the field's new value.
    HIncrBy {
        /// The hash (Redisson's lock name); made empty if missing, `WRONGTYPE` on a string.
        key: String,
        /// The field changed, created at 0 if absent and not removed at 0 (Redisson's field
        /// is the owner, `uuid:threadId`).
        field: String,
        /// The increment (negative to decrement).
        by: i64,
    },
    /// `HEXISTS key field` → 1 or 0.
    HExists {
        /// The hash looked in; a missing key answers 0, a string `WRONGTYPE`.
        key: String,
        /// The field looked for (Redisson: the owner, `uuid:threadId`).
        field: String,
    },
    /// `PUBLISH channel message` → the number of subscribers that got it; touches no
    /// key (Redisson's unlock script wakes waiters with it). The spec has no
    /// subscribers: 0.
    Publish {
        /// The channel, as sent (Redisson's is `redisson_lock__channel:{key}`); not a key.
        channel: String,
        /// The payload, as sent; nothing reads it, since the spec has no subscribers.
        message: String,
    },
    /// `WAIT numreplicas timeout`. A node alone has no replicas and answers `0` at once;
    /// replication (see the failover model) counts acknowledgements.
    Wait {
        /// Replicas to wait for.
        numreplicas: u32,
        /// Milliseconds (0: forever).
        timeout: u64,
    },
    /// Compare-and-delete:
    /// `if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end`
    /// → 1 when deleted, 0 otherwise.
    EvalCompareAndDelete {
        /// `KEYS[1]`.
        key: String,
        /// `ARGV[1]`: the value the caller set.
        value: String,
    },
    /// Compare-and-renew:
    /// `if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end`
    /// → 1 when renewed, 0 otherwise.
    EvalCompareAndRenew {
        /// `KEYS[1]`.
        key: String,
        /// `ARGV[1]`: the value the caller set.
        value: String,
        /// `ARGV[2]`: the new lease in ms.
        px: u64,
    },
    /// Compare-and-transfer, a local hand-off in one command: if the key holds
    /// `ARGV[1]`, `SET KEYS[1] ARGV[2] PX ARGV[3]` and return 1, else return 0. The
    /// holder's release and the next owner's grant happen at one instant, so the key is
    /// never free in between and nobody else can slip in.
    EvalCompareAndTransfer {
        /// `KEYS[1]`.
        key: String,
        /// `ARGV[1]`: the releasing owner's value.
        value: String,
        /// `ARGV[2]`: the next owner's value.
        to: String,
        /// `ARGV[3]`: the next owner's lease in ms.
        px: u64,
    },
    /// The fenced acquire script: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`; when set,
    /// `INCR KEYS[2]` and return the new token (≥ 1); otherwise return `-1 - PTTL`
    /// (negative: busy, with the holder's remaining lease).
    EvalFencedAcquire {
        /// `KEYS[1]`: the lock name.
        key: String,
        /// `KEYS[2]`: the token counter.
        fence: String,
        /// `ARGV[1]`: the owner.
        value: String,
        /// `ARGV[2]`: the lease in ms.
        px: u64,
    },
    /// Redisson's lock script (`tryLockInnerAsync`): if the key does not exist, or the
    /// hash has field `ARGV[2]`, `HINCRBY` it by one, `PEXPIRE` the key and return nil;
    /// otherwise return `PTTL key`.
    EvalRedissonLock {
        /// `KEYS[1]`: the lock name.
        key: String,
        /// `ARGV[2]`: the owner, `uuid:threadId` in Redisson.
        field: String,
        /// `ARGV[1]`: the lease in ms.
        px: u64,
    },
    /// Redisson's unlock script: nil when the field is absent; otherwise `HINCRBY -1`,
    /// and if the count is still positive `PEXPIRE` and return 0, else `DEL` (and
    /// publish) and return 1.
    EvalRedissonUnlock {
        /// `KEYS[1]`.
        key: String,
        /// `ARGV[3]`: the owner.
        field: String,
        /// `ARGV[2]`: the lease in ms, re-armed while holds remain.
        px: u64,
    },
    /// Redisson's watchdog renewal (`renewExpirationAsync`): if the field exists,
    /// `PEXPIRE` and return 1, else return 0.
    EvalRedissonRenew {
        /// `KEYS[1]`.
        key: String,
        /// `ARGV[2]`: the owner.
        field: String,
        /// `ARGV[1]`: the lease in ms.
        px: u64,
    },
    /// A script the spec runs itself, in its embedded Lua 5.1 (`lua.rs`): `EVALSHA sha
    /// numkeys keys… args…`, the source known to the spec's script book (a protocol
    /// file's scripts, or one a client loaded). Its effect is whatever the script's
    /// `redis.call`s do to the keyspace, atomically.
    Eval {
        /// The script's SHA1, lowercase hex.
        sha: String,
        /// `KEYS`.
        keys: Vec<String>,
        /// `ARGV`.
        args: Vec<String>,
    },
    /// A command the spec does not model, as a client sent it (read off an external
    /// client's traffic: `HSET`, a script whose source is none of the above, `DEL` of
    /// several keys). Its effect is unknown: the spec answers an error and changes
    /// nothing, and the checks that read commands treat a writing one as possibly
    /// having changed any key of its server.
    Other {
        /// The command's name, as sent (`HSET`, `EVALSHA`).
        name: String,
        /// Its arguments, as sent (binary ones lossily as UTF-8).
        args: Vec<String>,
        /// Whether it may change the keyspace (a command not known to be read-only is
        /// taken to).
        write: bool,
    },
}

impl RedisCommand {
    /// The key the command touches (`None` for `WAIT`).
    pub fn key(&self) -> Option<&str> {
        use RedisCommand::*;
        match self {
            Get { key }
            | Set { key, .. }
            | SetXx { key, .. }
            | SetNx { key, .. }
            | Del { key }
            | Expire { key, .. }
            | PExpire { key, .. }
            | PTtl { key }
            | Exists { key }
            | Incr { key }
            | HIncrBy { key, .. }
            | HExists { key, .. }
            | EvalCompareAndDelete { key, .. }
            | EvalCompareAndRenew { key, .. }
            | EvalCompareAndTransfer { key, .. }
            | EvalFencedAcquire { key, .. }
            | EvalRedissonLock { key, .. }
            | EvalRedissonUnlock { key, .. }
            | EvalRedissonRenew { key, .. } => Some(key),
            Eval { keys, .. } => keys.first().map(String::as_str),
            Wait { .. } | Publish { .. } | Other { .. } => None,
        }
    }

    /// Every key the command touches: its [`RedisCommand::key`], the token counter of
    /// the fenced acquire, a script's `KEYS`.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            RedisCommand::EvalFencedAcquire { key, fence, .. } => vec![key, fence],
            RedisCommand::Eval { keys, .. } => keys.iter().map(String::as_str).collect(),
            other => other.key().into_iter().collect(),
        }
    }

    /// Whether the command may change the keyspace, i.e. goes into the replication
    /// stream.
    pub fn is_write(&self) -> bool {
        use RedisCommand::*;
        match self {
            Other { write, .. } => *write,
            Get { .. }
            | PTtl { .. }
            | Exists { .. }
            | HExists { .. }
            | Wait { .. }
            | Publish { .. } => false,
            _ => true,
        }
    }

    /// Whether the spec models what the command does ([`RedisCommand::Other`] is the
    /// one it does not).
    pub fn is_modelled(&self) -> bool {
        match self {
            RedisCommand::Other { .. } => false,
            RedisCommand::Eval { sha, .. } => super::lua::source(sha).is_some(),
            _ => true,
        }
    }
}

/// A reply, as RESP types (serialized `"ok"`, `"nil"`, `{"integer":1}`, …;
/// [`Display`](std::fmt::Display) prints it as `redis-cli` does).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedisReply {
    /// `+OK`.
    Ok,
    /// The nil bulk string / nil reply.
    Nil,
    /// `:n`.
    Integer(i64),
    /// A bulk string.
    Bulk(String),
    /// `-ERR …` / `-WRONGTYPE …`.
    Error(String),
    /// A multi-bulk reply (what a script returns as a Lua array).
    Array(Vec<RedisReply>),
}

impl RedisReply {
    /// The integer of an integer reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            RedisReply::Integer(i) => Some(*i),
            _ => None,
        }
    }
}
