//! A single Redis node, as far as lock protocols use it: string and hash keys with
//! millisecond deadlines, the commands lock clients send, and the Lua scripts people
//! deploy (compare-and-delete, compare-and-renew, Redisson's reentrant hash scripts).
//!
//! This module is the one place their semantics are written: the vocabulary in
//! `command.rs`, what each command does in `exec.rs`, time and the [`Spec`] here. The stateright models run it as
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

mod command;
pub use command::{RedisCommand, RedisReply};

mod exec;
use exec::exec;

mod keyspace;
pub use keyspace::Keyspace;

pub mod lua;

mod words;
pub use words::{NONDETERMINISTIC, SPEC_COMMANDS};

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
    /// A string, or Redisson's hash of owner → hold count; a command meant for the other
    /// kind answers `WRONGTYPE`.
    pub value: Value,
    /// When the key expires (`PX`, `PEXPIRE`, `EXPIRE`).
    pub deadline: Option<Window>,
}

/// The keyspace of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RedisState {
    /// Every key that has not been deleted (it may have expired: see [`RedisState::live`]).
    pub keys: Keyspace,
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

/// Runs `cmd` at instant `now`: the reference behaviour of a node.
/// (`now` in milliseconds, the server's clock.)
pub fn apply(state: &RedisState, cmd: &RedisCommand, now: u64) -> (RedisReply, RedisState) {
    let mut next = state.clone();
    let reply = exec(&mut next, cmd, Clock::MS.at(Window::at(now)));
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
        // Every touched key whose deadline the window straddles doubles the branches. A
        // script may touch several, and (outside a cluster) keys it was not given in
        // KEYS: every key of the node counts as touched.
        let touched: Vec<&str> = match cmd {
            RedisCommand::Eval { .. } => state.keys.keys().map(String::as_str).collect(),
            _ => cmd.keys(),
        };
        let straddled: Vec<&str> = touched
            .into_iter()
            .filter(|k| {
                state
                    .keys
                    .get(k)
                    .is_some_and(|e| maybe_live(e.deadline, at) && maybe_expired(e.deadline, at))
            })
            .collect();
        let mut out: Outcomes<RedisReply, RedisState> = Outcomes::new();
        for expired in 0..1u64 << straddled.len() {
            let mut next = state.clone();
            for (i, k) in straddled.iter().enumerate() {
                if expired & (1 << i) != 0 {
                    next.keys.remove(k);
                }
            }
            let reply = exec(&mut next, cmd, self.clock(at));
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

#[cfg(test)]
mod tests;
