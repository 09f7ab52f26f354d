//! The step orders clients follow, one per protocol of the write-ups (SETNX → SET NX PX
//! → Lua → Redisson), or a user's own ([`Protocol::Described`]); each step exactly one
//! command to the current master.

use crate::protocol::by_address::{ByAddress, Named};
use crate::protocol::redis::steps::{Fill, OnBusy, Outcome};
use crate::protocol::redis::RedisProtocol;
use crate::redis::spec::{RedisCommand, RedisReply};

use super::keys::{FENCE_KEY, LOCK_KEY};

/// A user's protocol, compared and hashed by identity (see [`ByAddress`]).
pub type DescribedRef = ByAddress<RedisProtocol>;

impl Named for RedisProtocol {
    fn name(&self) -> &str {
        &self.name
    }
}

/// What a client fills a step with: its value as `{token}`, the previous step's reply
/// as `{reply}` (see [`Fill::reply`]).
#[derive(Clone, Copy, Debug)]
pub struct Said<'a> {
    /// The client's value.
    pub value: &'a str,
    /// The reply `{reply}` stands for.
    pub reply: &'a str,
}

impl<'a> Said<'a> {
    /// A client writing `value` before any reply.
    pub fn value(value: &'a str) -> Self {
        Said { value, reply: "" }
    }
}

fn fill<'a>(said: Said<'a>, ttl: u64, now: u64) -> Fill<'a> {
    Fill {
        key: LOCK_KEY,
        token: said.value,
        lease_ms: ttl,
        now_ms: now,
        reply: said.reply,
    }
}

/// How a client takes and gives back the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// `GET lock`; if nil, `SET lock v` — check and set are two commands. Release `DEL`.
    GetSet,
    /// `SETNX lock v`, no TTL; release `DEL`.
    SetNx,
    /// `SETNX lock v`, then `PEXPIRE lock ttl` as a second command; release `DEL`.
    SetNxExpire,
    /// `SET lock v NX PX ttl`; release an unconditional `DEL`.
    SetPxDel,
    /// `SET lock v NX PX ttl`; release `GET lock`, and if it is ours, `DEL` (two commands).
    SetPxGetDel,
    /// `SET lock v NX PX ttl`; release by the compare-and-delete script.
    SetPxLua,
    /// Redisson: lock/unlock hash scripts with hold counts, a watchdog renewing the lease;
    /// each client enters twice (reentrancy) and leaves twice.
    Redisson,
    /// A user's protocol: a protocol file's or the builder's steps.
    Described(DescribedRef),
}

/// What a client writes as its identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// A per-client random UUID (`c0`, `c1`, … in the model).
    Unique,
    /// The millisecond at which the client started acquiring: two clients starting in
    /// the same millisecond share it.
    Timestamp,
    /// Redisson's field without the per-process UUID: every client is thread 1 of its
    /// own process, so all share `t1`.
    ThreadId,
}

/// One step of acquiring: the command for stage `stage` at the client's `now`.
pub fn acquire(p: Protocol, stage: u8, said: Said<'_>, ttl: u64, now: u64) -> Option<RedisCommand> {
    if let Protocol::Described(d) = p {
        return d.0.acquire_command(stage, &fill(said, ttl, now));
    }
    let value = said.value;
    let key = LOCK_KEY.to_string();
    let value = value.to_string();
    Some(match (p, stage) {
        (Protocol::GetSet, 0) => RedisCommand::Get { key },
        (Protocol::GetSet, _) => RedisCommand::Set {
            key,
            value,
            nx: false,
            px: None,
        },
        (Protocol::SetNx | Protocol::SetNxExpire, 0) => RedisCommand::SetNx { key, value },
        (Protocol::SetNxExpire, _) => RedisCommand::PExpire { key, ms: ttl },
        (Protocol::Redisson, _) => RedisCommand::EvalRedissonLock {
            key,
            field: value,
            px: ttl,
        },
        _ => RedisCommand::Set {
            key,
            value,
            nx: true,
            px: Some(ttl),
        },
    })
}

/// What an acquire step's reply means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Go on with the next stage.
    Next,
    /// The lock is ours.
    Got,
    /// Someone holds it: retry from the first stage.
    Busy,
}

/// Interprets the reply to [`acquire`]'s command.
pub fn acquired(p: Protocol, stage: u8, said: Said<'_>, reply: &RedisReply) -> Acquired {
    if let Protocol::Described(d) = p {
        return match d.0.acquired(stage, reply, &fill(said, 0, 0)) {
            Outcome::Next => Acquired::Next,
            Outcome::Granted => Acquired::Got,
            _ => Acquired::Busy,
        };
    }
    match (p, stage, reply) {
        (Protocol::GetSet, 0, RedisReply::Nil) => Acquired::Next,
        (Protocol::GetSet, 0, _) => Acquired::Busy,
        (Protocol::GetSet, _, _) => Acquired::Got,
        (Protocol::SetNx, _, RedisReply::Integer(1)) => Acquired::Got,
        (Protocol::SetNxExpire, 0, RedisReply::Integer(1)) => Acquired::Next,
        (Protocol::SetNxExpire, 1, _) => Acquired::Got,
        (Protocol::Redisson, _, RedisReply::Nil) => Acquired::Got,
        (Protocol::SetPxDel | Protocol::SetPxGetDel | Protocol::SetPxLua, _, RedisReply::Ok) => {
            Acquired::Got
        }
        _ => Acquired::Busy,
    }
}

/// The release command of stage `stage` (`None`: released, nothing more to send).
pub fn release(p: Protocol, stage: u8, said: Said<'_>, ttl: u64, now: u64) -> Option<RedisCommand> {
    if let Protocol::Described(d) = p {
        return d.0.release_command(stage, &fill(said, ttl, now));
    }
    let value = said.value;
    let key = LOCK_KEY.to_string();
    let value = value.to_string();
    match (p, stage) {
        (Protocol::SetPxGetDel, 0) => Some(RedisCommand::Get { key }),
        (Protocol::SetPxLua, 0) => Some(RedisCommand::EvalCompareAndDelete { key, value }),
        (Protocol::Redisson, 0) => Some(RedisCommand::EvalRedissonUnlock {
            key,
            field: value,
            px: ttl,
        }),
        (Protocol::SetPxGetDel, 1) => Some(RedisCommand::Del { key }),
        (_, 0) => Some(RedisCommand::Del { key }),
        _ => None,
    }
}

/// After release stage `stage` answered `reply`: the next stage, or `None` when done.
pub fn released(p: Protocol, stage: u8, said: Said<'_>, reply: &RedisReply) -> Option<u8> {
    if let Protocol::Described(d) = p {
        let next = d.0.released(stage, reply, &fill(said, 0, 0)) == Outcome::Next;
        return next.then_some(stage + 1);
    }
    match (p, stage, reply) {
        (Protocol::SetPxGetDel, 0, RedisReply::Bulk(v)) if v == said.value => Some(1),
        _ => None,
    }
}

/// `INCR fence`: the fencing token after acquiring.
pub fn fence() -> RedisCommand {
    RedisCommand::Incr {
        key: FENCE_KEY.to_string(),
    }
}

/// The watchdog's renewal of the client's lease (Redisson's renew script, or a user
/// protocol's first renew step).
pub fn renew(p: Protocol, said: Said<'_>, ttl: u64, now: u64) -> Option<RedisCommand> {
    if let Protocol::Described(d) = p {
        return d.0.renew_command(0, &fill(said, ttl, now));
    }
    Some(RedisCommand::EvalRedissonRenew {
        key: LOCK_KEY.to_string(),
        field: said.value.to_string(),
        px: ttl,
    })
}

/// Whether the renewal's reply extended the lease.
pub fn renewed(p: Protocol, said: Said<'_>, reply: &RedisReply) -> bool {
    match p {
        Protocol::Described(d) => d.0.renewed(0, reply, &fill(said, 0, 0)) == Outcome::Renewed,
        _ => *reply == RedisReply::Integer(1),
    }
}

/// Whether a watchdog renews the holder's lease.
pub fn renews(p: Protocol) -> bool {
    match p {
        Protocol::Described(d) => !d.0.renew.is_empty(),
        _ => p == Protocol::Redisson,
    }
}

/// Whether each client enters twice and leaves twice.
pub fn reentrant(p: Protocol) -> bool {
    match p {
        Protocol::Described(d) => d.0.reentrant,
        _ => p == Protocol::Redisson,
    }
}

/// What a refused client does.
pub fn on_busy(p: Protocol) -> OnBusy {
    match p {
        Protocol::Described(d) => d.0.on_busy,
        _ => OnBusy::Retry,
    }
}

/// How many times a client tries before giving up (`None`: no bound).
pub fn attempts(p: Protocol) -> Option<u8> {
    match p {
        Protocol::Described(d) => d.0.attempts,
        _ => None,
    }
}

/// The fencing token acquire step `stage`'s reply carries (a user protocol's token
/// step; the catalog's protocols take theirs with a separate `INCR`).
pub fn granted_token(p: Protocol, stage: u8, reply: &RedisReply) -> Option<i64> {
    match p {
        Protocol::Described(d) => d.0.token(stage, reply),
        _ => None,
    }
}

/// Whether commands depend on the client's clock (`{now_ms}`), so cannot be built once
/// per client.
pub fn uses_now(p: Protocol) -> bool {
    matches!(p, Protocol::Described(d) if d.0.uses_now())
}

/// Whether a step reads an earlier step's reply (`{reply}`), so a client keeps it.
pub fn uses_reply(p: Protocol) -> bool {
    matches!(p, Protocol::Described(d) if d.0.uses_reply())
}

/// `WAIT n 0`: block until `n` replicas acknowledged the client's writes.
pub fn wait(n: u32) -> RedisCommand {
    RedisCommand::Wait {
        numreplicas: n,
        timeout: 0,
    }
}

/// Whether the protocol's lock has a lease, so its holder must finish (or renew) in time.
pub fn has_ttl(p: Protocol) -> bool {
    match p {
        Protocol::Described(d) => d.0.has_ttl(),
        _ => !matches!(p, Protocol::GetSet | Protocol::SetNx),
    }
}
