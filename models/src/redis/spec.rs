//! A single Redis node, as far as lock protocols use it: string and hash keys with
//! millisecond deadlines, the commands lock clients send, and the Lua scripts people
//! deploy (compare-and-delete, compare-and-renew, Redisson's reentrant hash scripts).
//!
//! This is the one place their semantics are written. The stateright models run it as
//! the server (and as every replica and every Redlock node), the history checker holds
//! recorded command histories against it through [`Spec`], and the real clients in
//! `implementations/` replay what they send through [`apply`] to prove they speak the
//! same protocol.
//!
//! Time: a key with deadline `d` is live at instants `< d` and gone from `d` on (the
//! same convention as [`crate::spec::lock`]). Deadlines are [`Window`]s so that a history,
//! which only knows an interval for each command, can be checked; models always use a
//! single instant.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::{maybe_expired, maybe_live, Outcomes, Spec, Window};

// How a request and a reply read lives in `text.rs`; other crates name it here.
pub use super::text::{command_text, entry_text, entry_text_with, reply_text};

/// A stored value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// A string (`SET`, `INCR` keep integers as decimal strings, as Redis does).
    Str(String),
    /// A hash of integer fields (`HINCRBY`): Redisson's `owner → hold count`.
    Hash(BTreeMap<String, i64>),
}

/// A key's value and its deadline (`None`: persistent).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// When the key expires (`PX`, `PEXPIRE`, `EXPIRE`).
    pub deadline: Option<Window>,
}

/// The keyspace of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedisState {
    /// Every key that has not been deleted (it may have expired: see [`RedisState::live`]).
    pub keys: BTreeMap<String, Entry>,
}

impl RedisState {
    /// The key's entry if it is live at `now`.
    pub fn live(&self, key: &str, now: u64) -> Option<&Entry> {
        self.keys
            .get(key)
            .filter(|e| maybe_live(e.deadline, Window::at(now)))
    }

    /// Forgets every key expired at `now`. Redis does this lazily or in its expiry cycle;
    /// the result is indistinguishable to clients, and models call it to keep one state
    /// per observable keyspace. Never call it on a replica with unapplied stream entries:
    /// a replica only deletes what its master tells it to.
    pub fn purge_expired(&mut self, now: u64) {
        self.keys
            .retain(|_, e| maybe_live(e.deadline, Window::at(now)));
    }

    /// The first instant at which some key is expired, i.e. from which
    /// [`RedisState::purge_expired`] removes something (`None`: every key persists).
    pub fn first_expiry(&self) -> Option<u64> {
        self.keys
            .values()
            .filter_map(|e| e.deadline)
            .map(|d| d.hi)
            .min()
    }
}

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
        /// The key.
        key: String,
    },
    /// `SET key value [NX] [PX ms]` → `OK`, or nil when `NX` finds the key live.
    Set {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Only if the key does not exist.
        nx: bool,
        /// Deadline in ms from now; `None` makes the key persistent.
        px: Option<u64>,
    },
    /// `SETNX key value` → `1` when set, `0` when the key was live.
    SetNx {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// `DEL key` → number of keys removed (0 or 1).
    Del {
        /// The key.
        key: String,
    },
    /// `EXPIRE key seconds` → `1` when the key exists, else `0`.
    Expire {
        /// The key.
        key: String,
        /// Seconds from now.
        seconds: u64,
    },
    /// `PEXPIRE key ms` → `1` when the key exists, else `0`.
    PExpire {
        /// The key.
        key: String,
        /// Milliseconds from now.
        ms: u64,
    },
    /// `PTTL key` → ms left, `-1` without deadline, `-2` when missing.
    PTtl {
        /// The key.
        key: String,
    },
    /// `EXISTS key` → 1 or 0.
    Exists {
        /// The key.
        key: String,
    },
    /// `INCR key` → the incremented integer (a fencing token counter).
    Incr {
        /// The key.
        key: String,
    },
    /// `HINCRBY key field by` → the field's new value.
    HIncrBy {
        /// The key.
        key: String,
        /// The field.
        field: String,
        /// The increment (negative to decrement).
        by: i64,
    },
    /// `HEXISTS key field` → 1 or 0.
    HExists {
        /// The key.
        key: String,
        /// The field.
        field: String,
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
            Wait { .. } | Other { .. } => None,
        }
    }

    /// Every key the command touches: its [`RedisCommand::key`], and the token counter
    /// of the fenced acquire.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            RedisCommand::EvalFencedAcquire { key, fence, .. } => vec![key, fence],
            other => other.key().into_iter().collect(),
        }
    }

    /// Whether the command may change the keyspace, i.e. goes into the replication
    /// stream.
    pub fn is_write(&self) -> bool {
        use RedisCommand::*;
        match self {
            Other { write, .. } => *write,
            Get { .. } | PTtl { .. } | Exists { .. } | HExists { .. } | Wait { .. } => false,
            _ => true,
        }
    }

    /// Whether the spec models what the command does ([`RedisCommand::Other`] is the
    /// one it does not).
    pub fn is_modelled(&self) -> bool {
        !matches!(self, RedisCommand::Other { .. })
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
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Runs `cmd` at instant `now`: the reference behaviour of a node.
/// (`now` in milliseconds, the server's clock.)
pub fn apply(state: &RedisState, cmd: &RedisCommand, now: u64) -> (RedisReply, RedisState) {
    let mut next = state.clone();
    let reply = exec(&mut next, cmd, Clock::MS.at(Window::at(now)), false);
    (reply, next)
}

/// When a command runs: an instant of `at`, on a clock of `ticks_per_ms` ticks per
/// millisecond of the server's.
#[derive(Clone, Copy, Debug)]
struct Clock {
    at: Window,
    ticks_per_ms: u64,
}

impl Clock {
    /// The server's own milliseconds.
    const MS: Clock = Clock {
        at: Window { lo: 0, hi: 0 },
        ticks_per_ms: 1,
    };

    fn at(self, at: Window) -> Clock {
        Clock { at, ..self }
    }

    /// The deadline of a lease of `ms` set now. On a finer clock than the server's, the
    /// server stamps the key with its whole millisecond and keeps it through the
    /// millisecond of the deadline, so the key may last up to one millisecond longer.
    fn deadline(self, ms: u64) -> Window {
        let d = self.at.plus(ms.saturating_mul(self.ticks_per_ms));
        if self.ticks_per_ms > 1 {
            Window::between(d.lo, d.hi.saturating_add(self.ticks_per_ms))
        } else {
            d
        }
    }

    /// The least remaining lease (ms) `PTTL` may report for deadline `d`. On a finer
    /// clock, the server counts from its whole millisecond to the one before the key is
    /// gone: up to one less.
    fn least_left(self, d: Window) -> i64 {
        let ms = d.lo.saturating_sub(self.at.hi) / self.ticks_per_ms;
        let ms = if self.ticks_per_ms > 1 {
            ms.saturating_sub(1)
        } else {
            ms
        };
        i64::try_from(ms).unwrap_or(i64::MAX)
    }

    /// The most remaining lease (ms) `PTTL` may report for deadline `d`.
    fn most_left(self, d: Window) -> i64 {
        let ms = d.hi.saturating_sub(self.at.lo).div_ceil(self.ticks_per_ms);
        i64::try_from(ms).unwrap_or(i64::MAX)
    }
}

/// Runs `cmd` with the key's expiry already decided: `expired` removes the key first.
fn exec(s: &mut RedisState, cmd: &RedisCommand, clock: Clock, expired: bool) -> RedisReply {
    let at = clock.at;
    use RedisCommand::*;
    use RedisReply as R;
    if let Some(k) = cmd.key() {
        let gone = match s.keys.get(k) {
            Some(e) => expired || !maybe_live(e.deadline, at),
            None => false,
        };
        if gone {
            s.keys.remove(k);
        }
    }
    let deadline = |ms: u64| Some(clock.deadline(ms));
    match cmd {
        Get { key } => match s.keys.get(key).map(|e| &e.value) {
            None => R::Nil,
            Some(Value::Str(v)) => R::Bulk(v.clone()),
            Some(Value::Hash(_)) => R::Error(WRONGTYPE.into()),
        },
        Set { key, value, nx, px } => {
            if *nx && s.keys.contains_key(key) {
                return R::Nil;
            }
            let value = Value::Str(value.clone());
            let deadline = px.and_then(deadline);
            s.keys.insert(key.clone(), Entry { value, deadline });
            R::Ok
        }
        SetNx { key, value } => {
            if s.keys.contains_key(key) {
                return R::Integer(0);
            }
            let value = Value::Str(value.clone());
            s.keys.insert(
                key.clone(),
                Entry {
                    value,
                    deadline: None,
                },
            );
            R::Integer(1)
        }
        Del { key } => R::Integer(i64::from(s.keys.remove(key).is_some())),
        Expire { key, seconds } => pexpire(s, key, seconds.saturating_mul(1000), clock),
        PExpire { key, ms } => pexpire(s, key, *ms, clock),
        PTtl { key } => match s.keys.get(key) {
            None => R::Integer(-2),
            Some(Entry { deadline: None, .. }) => R::Integer(-1),
            Some(Entry {
                deadline: Some(d), ..
            }) => R::Integer(clock.least_left(*d)),
        },
        Exists { key } => R::Integer(i64::from(s.keys.contains_key(key))),
        Incr { key } => {
            let current = match s.keys.get(key) {
                None => 0,
                Some(Entry {
                    value: Value::Str(v),
                    ..
                }) => match v.parse::<i64>() {
                    Ok(n) => n,
                    Err(_) => {
                        return R::Error("ERR value is not an integer or out of range".into())
                    }
                },
                Some(_) => return R::Error(WRONGTYPE.into()),
            };
            let n = current + 1;
            let deadline = s.keys.get(key).and_then(|e| e.deadline);
            s.keys.insert(
                key.clone(),
                Entry {
                    value: Value::Str(n.to_string()),
                    deadline,
                },
            );
            R::Integer(n)
        }
        HIncrBy { key, field, by } => match hincrby(s, key, field, *by) {
            Ok(n) => R::Integer(n),
            Err(e) => e,
        },
        HExists { key, field } => match s.keys.get(key).map(|e| &e.value) {
            None => R::Integer(0),
            Some(Value::Hash(h)) => R::Integer(i64::from(h.contains_key(field))),
            Some(Value::Str(_)) => R::Error(WRONGTYPE.into()),
        },
        Wait { .. } => R::Integer(0),
        // Nothing is known of its effect: a check that needs one leaves it out.
        Other { name, .. } => R::Error(format!("{name}: not modelled by the spec")),
        EvalCompareAndDelete { key, value } => {
            if owns_string(s, key, value) {
                s.keys.remove(key);
                R::Integer(1)
            } else {
                R::Integer(0)
            }
        }
        EvalCompareAndRenew { key, value, px } => {
            if owns_string(s, key, value) {
                pexpire(s, key, *px, clock)
            } else {
                R::Integer(0)
            }
        }
        EvalCompareAndTransfer { key, value, to, px } => {
            if owns_string(s, key, value) {
                let entry = Entry {
                    value: Value::Str(to.clone()),
                    deadline: deadline(*px),
                };
                s.keys.insert(key.clone(), entry);
                R::Integer(1)
            } else {
                R::Integer(0)
            }
        }
        EvalFencedAcquire {
            key,
            fence,
            value,
            px,
        } => {
            let set = Set {
                key: key.clone(),
                value: value.clone(),
                nx: true,
                px: Some(*px),
            };
            if exec(s, &set, clock, false) == R::Ok {
                return exec(s, &Incr { key: fence.clone() }, clock, false);
            }
            match exec(s, &PTtl { key: key.clone() }, clock, false) {
                R::Integer(ttl) => R::Integer(-1 - ttl.max(0)),
                other => other,
            }
        }
        EvalRedissonLock { key, field, px } => {
            let free = !s.keys.contains_key(key);
            if free || has_field(s, key, field) {
                if let Err(e) = hincrby(s, key, field, 1) {
                    return e;
                }
                pexpire(s, key, *px, clock);
                return R::Nil;
            }
            exec(s, &PTtl { key: key.clone() }, clock, false)
        }
        EvalRedissonUnlock { key, field, px } => {
            if !has_field(s, key, field) {
                return R::Nil;
            }
            match hincrby(s, key, field, -1) {
                Ok(n) if n > 0 => {
                    pexpire(s, key, *px, clock);
                    R::Integer(0)
                }
                Ok(_) => {
                    s.keys.remove(key);
                    R::Integer(1)
                }
                Err(e) => e,
            }
        }
        EvalRedissonRenew { key, field, px } => {
            if has_field(s, key, field) {
                pexpire(s, key, *px, clock);
                R::Integer(1)
            } else {
                R::Integer(0)
            }
        }
    }
}

fn owns_string(s: &RedisState, key: &str, value: &str) -> bool {
    matches!(s.keys.get(key), Some(Entry { value: Value::Str(v), .. }) if v == value)
}

fn has_field(s: &RedisState, key: &str, field: &str) -> bool {
    matches!(s.keys.get(key), Some(Entry { value: Value::Hash(h), .. }) if h.contains_key(field))
}

fn pexpire(s: &mut RedisState, key: &str, ms: u64, clock: Clock) -> RedisReply {
    match s.keys.get_mut(key) {
        Some(e) => {
            e.deadline = Some(clock.deadline(ms));
            RedisReply::Integer(1)
        }
        None => RedisReply::Integer(0),
    }
}

fn hincrby(s: &mut RedisState, key: &str, field: &str, by: i64) -> Result<i64, RedisReply> {
    let entry = s.keys.entry(key.to_string()).or_insert_with(|| Entry {
        value: Value::Hash(BTreeMap::new()),
        deadline: None,
    });
    match &mut entry.value {
        Value::Hash(h) => {
            let n = h.entry(field.to_string()).or_insert(0);
            *n += by;
            Ok(*n)
        }
        Value::Str(_) => Err(RedisReply::Error(WRONGTYPE.into())),
    }
}

/// The node as a [`Spec`]: the history checker's model of one Redis server.
///
/// Its time is the server's milliseconds ([`RedisSpec::default`], as the models count),
/// or a finer clock ([`RedisSpec::ticking`]): a history's nanoseconds keep the order of
/// commands a few microseconds apart, which milliseconds would blur.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedisSpec {
    ticks_per_ms: u64,
}

impl Default for RedisSpec {
    fn default() -> Self {
        RedisSpec { ticks_per_ms: 1 }
    }
}

impl RedisSpec {
    /// The spec on a clock of `ticks_per_ms` ticks per millisecond (1 000 000 for a
    /// history's nanoseconds; at least 1).
    pub fn ticking(ticks_per_ms: u64) -> Self {
        RedisSpec {
            ticks_per_ms: ticks_per_ms.max(1),
        }
    }

    fn clock(&self, at: Window) -> Clock {
        Clock {
            at,
            ticks_per_ms: self.ticks_per_ms,
        }
    }
}

impl Spec for RedisSpec {
    type State = RedisState;
    type Input = RedisCommand;
    type Output = RedisReply;

    fn init(&self) -> RedisState {
        RedisState::default()
    }

    /// When the window straddles the touched key's deadline, both "still live" and
    /// "expired" are possible outcomes. (A remaining lease is the least possible one;
    /// `observe` accepts the others.)
    fn step(
        &self,
        state: &RedisState,
        cmd: &RedisCommand,
        at: Window,
    ) -> Outcomes<RedisReply, RedisState> {
        let entry = cmd.key().and_then(|k| state.keys.get(k));
        let mut branches = Vec::with_capacity(2);
        match entry {
            Some(e) if maybe_live(e.deadline, at) && maybe_expired(e.deadline, at) => {
                branches.push(false);
                branches.push(true);
            }
            Some(e) => branches.push(!maybe_live(e.deadline, at)),
            None => branches.push(false),
        }
        let mut out: Outcomes<RedisReply, RedisState> = Outcomes::new();
        for expired in branches {
            let mut next = state.clone();
            let reply = exec(&mut next, cmd, self.clock(at), expired);
            if !out.iter().any(|(r, s)| *r == reply && *s == next) {
                out.push((reply, next));
            }
        }
        out
    }

    /// A remaining lease counts down while the command is in flight: `step` reports it
    /// at the window's last instant and the key's earliest deadline, but the command may
    /// have run at any instant of the window, against any deadline of the key's.
    fn observe(
        &self,
        before: &RedisState,
        cmd: &RedisCommand,
        at: Window,
        predicted: (RedisReply, RedisState),
        observed: &RedisReply,
    ) -> Option<RedisState> {
        if predicted.0 == *observed {
            return Some(predicted.1);
        }
        let (RedisReply::Integer(p), RedisReply::Integer(o)) = (&predicted.0, observed) else {
            return None;
        };
        let deadline = cmd
            .key()
            .and_then(|k| before.keys.get(k))
            .and_then(|e| e.deadline)?;
        let latest = self.clock(at).most_left(deadline);
        let within = |least: i64, ttl: i64| least <= ttl && ttl <= latest;
        let fits = match cmd {
            // A nil (granted) or another integer is no remaining lease.
            RedisCommand::PTtl { .. } | RedisCommand::EvalRedissonLock { .. } => {
                *p >= 0 && within(*p, *o)
            }
            // Busy is `-1 - PTTL`; a token (positive) is exact.
            RedisCommand::EvalFencedAcquire { .. } => *p < 0 && *o < 0 && within(-1 - p, -1 - o),
            _ => false,
        };
        fits.then_some(predicted.1)
    }

    /// The answers that prove the key live and untouched: a refused `SET NX`/`SETNX`, a
    /// busy fenced or Redisson acquire, a value read, a remaining lease. (A nil `GET` or
    /// a refused compare-and-delete is not one: it may be the command that finds the
    /// key expired and removes it.) Most of a busy lock's commands are these.
    fn read_only(&self, cmd: &RedisCommand, reply: &RedisReply) -> bool {
        use RedisCommand as C;
        use RedisReply as R;
        match (cmd, reply) {
            (C::Set { nx: true, .. }, R::Nil)
            | (C::SetNx { .. }, R::Integer(0))
            | (C::EvalRedissonLock { .. }, R::Integer(_))
            | (C::Get { .. }, R::Bulk(_))
            | (C::Exists { .. }, R::Integer(1))
            | (C::HExists { .. }, R::Integer(1)) => true,
            (C::EvalFencedAcquire { .. }, R::Integer(n)) => *n < 0,
            (C::PTtl { .. }, R::Integer(n)) => *n != -2,
            _ => false,
        }
    }

    fn describe(cmd: &RedisCommand, reply: Option<&RedisReply>) -> String {
        let r = reply.map_or_else(|| "?".to_string(), reply_text);
        format!("{} -> {r}", command_text(cmd))
    }
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

#[cfg(test)]
mod tests;
