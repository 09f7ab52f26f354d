//! The step orders clients follow, one per protocol of the write-ups (SETNX → SET NX PX
//! → Lua → Redisson), each step exactly one command to the current master.

use crate::redis::spec::{RedisCommand, RedisReply};

use super::keys::{FENCE_KEY, LOCK_KEY};

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

/// One step of acquiring: the command for stage `stage`.
pub fn acquire(p: Protocol, stage: u8, value: &str, ttl: u64) -> RedisCommand {
    let key = LOCK_KEY.to_string();
    let value = value.to_string();
    match (p, stage) {
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
    }
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
pub fn acquired(p: Protocol, stage: u8, reply: &RedisReply) -> Acquired {
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
pub fn release(p: Protocol, stage: u8, value: &str, ttl: u64) -> Option<RedisCommand> {
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
pub fn released(p: Protocol, stage: u8, value: &str, reply: &RedisReply) -> Option<u8> {
    match (p, stage, reply) {
        (Protocol::SetPxGetDel, 0, RedisReply::Bulk(v)) if v == value => Some(1),
        _ => None,
    }
}

/// `INCR fence`: the fencing token after acquiring.
pub fn fence() -> RedisCommand {
    RedisCommand::Incr {
        key: FENCE_KEY.to_string(),
    }
}

/// Redisson's watchdog: renew the client's hash field's lease.
pub fn renew(field: &str, ttl: u64) -> RedisCommand {
    RedisCommand::EvalRedissonRenew {
        key: LOCK_KEY.to_string(),
        field: field.to_string(),
        px: ttl,
    }
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
    !matches!(p, Protocol::GetSet | Protocol::SetNx)
}
