//! The Lua scripts of the Redis locks, verbatim, each named. Which spec command each
//! one is, and with which `KEYS` and `ARGV`, is [`super::wire`]'s business.
//!
//! Sources: the compare-and-delete of the Redis distributed-lock page; Redisson's
//! `tryLockInnerAsync`, `unlockInnerAsync` and `renewExpirationAsync` (the write-ups in
//! `shared/sources/003`); the fenced acquire is `SET NX PX` and `INCR` in one script so
//! a token is issued exactly when the lock is granted; compare-and-transfer is the local
//! hand-off of `redis-lua` (see `redis::lua`), a compare-and-delete whose delete is a
//! `SET` to the next owner.

use std::sync::OnceLock;

/// Libraries' scripts that mean what one of locklab's does, with the same `KEYS`,
/// `ARGV` and answers, so a library's traffic reads in the spec's words.
const ALIASES: &[(LockScript, &str)] = &[
    // redis-py's `Lock.LUA_RELEASE_SCRIPT` (redis/lock.py): 1 when it deleted its own
    // key, 0 otherwise.
    (
        LockScript::CompareAndDelete,
        "local token = redis.call('get', KEYS[1])
         if not token or token ~= ARGV[1] then
             return 0
         end
         redis.call('del', KEYS[1])
         return 1",
    ),
];

/// Which lock script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockScript {
    /// `KEYS[1]` lock, `ARGV[1]` owner: delete the key only if it holds `owner`.
    /// Returns 1 when deleted, 0 otherwise.
    CompareAndDelete,
    /// `KEYS[1]` lock, `ARGV[1]` owner, `ARGV[2]` ms: `PEXPIRE` only if the key holds
    /// `owner`. Returns 1 when extended, 0 otherwise.
    CompareAndPexpire,
    /// Redisson's lock: `KEYS[1]` hash, `ARGV[1]` lease ms, `ARGV[2]` owner field.
    /// Grants (nil) when the hash is absent or the owner already holds (count + 1);
    /// otherwise returns the holder's `PTTL`.
    HashAcquire,
    /// Redisson's unlock: `KEYS[1]` hash, `ARGV[1]` lease ms, `ARGV[2]` owner field.
    /// nil: not held by owner; 0: count decremented, lease refreshed; 1: deleted.
    HashRelease,
    /// Redisson's renewal: `KEYS[1]` hash, `ARGV[1]` lease ms, `ARGV[2]` owner field.
    /// 1 when the owner holds and the lease was refreshed, 0 otherwise.
    HashRenew,
    /// `KEYS[1]` lock, `KEYS[2]` token counter, `ARGV[1]` owner, `ARGV[2]` lease ms:
    /// `SET NX PX`, and on success `INCR` the counter and return the token (≥ 1); on
    /// failure return `-1 - PTTL` of the holder (so any negative answer means busy).
    FencedAcquire,
    /// `KEYS[1]` lock, `ARGV[1]` owner, `ARGV[2]` next owner, `ARGV[3]` lease ms: if the
    /// key holds `owner`, hand it to the next owner with a fresh lease in one step.
    /// Returns 1 when handed over, 0 otherwise.
    CompareAndTransfer,
}

impl LockScript {
    /// Every script.
    pub const ALL: [LockScript; 7] = [
        LockScript::CompareAndDelete,
        LockScript::CompareAndPexpire,
        LockScript::HashAcquire,
        LockScript::HashRelease,
        LockScript::HashRenew,
        LockScript::FencedAcquire,
        LockScript::CompareAndTransfer,
    ];

    /// The Lua source sent to the server.
    pub fn source(self) -> &'static str {
        match self {
            LockScript::CompareAndDelete => {
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                     return redis.call('del', KEYS[1]) \
                 else \
                     return 0 \
                 end"
            }
            LockScript::CompareAndPexpire => {
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                     return redis.call('pexpire', KEYS[1], ARGV[2]) \
                 else \
                     return 0 \
                 end"
            }
            LockScript::HashAcquire => {
                "if (redis.call('exists', KEYS[1]) == 0) then \
                     redis.call('hincrby', KEYS[1], ARGV[2], 1); \
                     redis.call('pexpire', KEYS[1], ARGV[1]); \
                     return nil; \
                 end; \
                 if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
                     redis.call('hincrby', KEYS[1], ARGV[2], 1); \
                     redis.call('pexpire', KEYS[1], ARGV[1]); \
                     return nil; \
                 end; \
                 return redis.call('pttl', KEYS[1]);"
            }
            LockScript::HashRelease => {
                "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then \
                     return nil; \
                 end; \
                 local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); \
                 if (counter > 0) then \
                     redis.call('pexpire', KEYS[1], ARGV[1]); \
                     return 0; \
                 else \
                     redis.call('del', KEYS[1]); \
                     return 1; \
                 end; \
                 return nil;"
            }
            LockScript::HashRenew => {
                "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
                     redis.call('pexpire', KEYS[1], ARGV[1]); \
                     return 1; \
                 end; \
                 return 0;"
            }
            LockScript::FencedAcquire => {
                "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
                     return redis.call('incr', KEYS[2]) \
                 end; \
                 local ttl = redis.call('pttl', KEYS[1]); \
                 if ttl < 0 then ttl = 0 end; \
                 return -1 - ttl"
            }
            LockScript::CompareAndTransfer => {
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                     redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3]); \
                     return 1 \
                 end; \
                 return 0"
            }
        }
    }

    /// The lock script `source` is, read as the server would run it: the same Lua up
    /// to whitespace, either locklab's own or a library's with the same meaning
    /// (redis-py's release is a compare-and-delete).
    pub fn recognise(source: &str) -> Option<LockScript> {
        let bare = |s: &str| -> String { s.chars().filter(|c| !c.is_whitespace()).collect() };
        let wanted = bare(source);
        LockScript::ALL
            .iter()
            .copied()
            .find(|s| bare(s.source()) == wanted)
            .or_else(|| {
                ALIASES
                    .iter()
                    .find(|(_, src)| bare(src) == wanted)
                    .map(|(s, _)| *s)
            })
    }

    /// The SHA1 the server knows the script by (computed once).
    pub fn sha(self) -> &'static str {
        static SHAS: OnceLock<Vec<String>> = OnceLock::new();
        let shas = SHAS.get_or_init(|| {
            LockScript::ALL
                .iter()
                .map(|s| redis::Script::new(s.source()).get_hash().to_string())
                .collect()
        });
        let i = LockScript::ALL.iter().position(|s| *s == self).unwrap_or(0);
        shas[i].as_str()
    }
}

#[cfg(test)]
mod tests;
