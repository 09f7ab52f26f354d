//! Redis clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client starts over, and past the horizon a state is stored rebased — its clock at
//! the horizon, every deadline and instant moved back with it, the counters that only
//! grow renumbered — so that a client retrying `SET NX` for ever while another takes
//! the lock again and again is a cycle the progress search can prove.
//!
//! Past the horizon no failover, split or other fault strikes any more, so a node that
//! is neither the master nor a cut-off old master is never read again by a client (a
//! heal's full sync makes it a copy of the master): its keys and unapplied writes are
//! stored empty. Only `WAIT` would count those writes, so a row with `WAIT` is judged
//! with clients that lock once.

use smallvec::SmallVec;

use crate::kernel::repeat::{Ranks, Rebase};
use crate::kernel::ClientPhase;

use super::keys::{FENCE_KEY, LOCK_KEY};
use super::model::{Client, Lease, Phase, RedisLockModel, RedisLockState};
use super::protocol::{self, ValueKind};
use super::replication::Node;
use super::shared_nodes::NodeRef;
use super::spec::Value;
use super::values::{self, Text};

impl RedisLockModel {
    /// Whether this model's clients can start over: not with `WAIT` (a replica's
    /// unapplied writes, which it counts, grow while clients lock again and the replica
    /// does not catch up), nor for a protocol file whose commands carry the clock or
    /// whose own token key the rebase does not know.
    pub fn can_repeat(&self) -> bool {
        if self.wait.is_some() {
            return false;
        }
        match self.protocol {
            protocol::Protocol::Described(d) => !d.0.uses_now() && !d.0.fences(),
            _ => true,
        }
    }

    /// Client `c` before its first step: what it starts as, and starts over as.
    pub(super) fn fresh(&self, c: usize) -> Client {
        Client {
            phase: if self.value == ValueKind::Timestamp {
                Phase::Idle
            } else {
                Phase::Acquire(0)
            },
            process: Default::default(),
            value: self.value_of(c),
            lease_until: Lease::NONE,
            token: 0,
            read: 0,
            wait_for: (0, 0),
            reply: Text::EMPTY,
            refused: 0,
        }
    }

    /// The state stored for `s`: `s` itself where clients lock once, otherwise with its
    /// counters renumbered, what nobody reads again dropped and, past the horizon, its
    /// clock moved back.
    pub(super) fn rebased(&self, mut s: RedisLockState) -> RedisLockState {
        if !self.repeat {
            return s;
        }
        let mut reach = self
            .down_after
            .max(self.min_replicas_lag.map_or(0, |l| l + 1));
        if self.value == ValueKind::Timestamp {
            // Room below the clock for every old timestamp a state can hold.
            reach = reach.max((self.clients + self.replicas) as u64 + 2);
        }
        let faults_over = s.now >= self.horizon;
        let r = Rebase::past(self.horizon.max(reach), s.now).unwrap_or(Rebase::stay(s.now));
        let stamps = self.stamps(&s, &r);
        let tokens = self.tokens(&s);
        s.now = r.now();
        if let Some(x) = &mut s.split {
            x.since = r.since(x.since, reach);
        }
        // What a client reads again only in some phases is dropped in the others.
        for c in s.clients.iter_mut() {
            c.lease_until = c.lease_until.get().map(|d| r.deadline(d)).into();
            if c.phase != Phase::Wait {
                c.wait_for = (0, 0);
            }
            if !c.phase.holding() {
                c.token = 0;
            }
            c.token = i64::try_from(tokens.get(u64::try_from(c.token).unwrap_or(0))).unwrap_or(0);
            if self.value == ValueKind::Timestamp && !c.value.is_empty() {
                c.value = Text::of(restamp(c.value.text(), &stamps));
            }
        }
        let kept = |i: usize, s: &RedisLockState| {
            i == s.master as usize || s.split.is_some_and(|x| x.node as usize == i)
        };
        let nodes: SmallVec<[NodeRef; 4]> = (0..s.nodes.len())
            .map(|i| {
                let mut n: Node = (*s.nodes[i]).clone();
                if kept(i, &s) || !faults_over {
                    for e in n.db.keys.values_mut() {
                        if let Some(d) = &mut e.deadline {
                            (d.lo, d.hi) = (r.deadline(d.lo), r.deadline(d.hi));
                        }
                    }
                    if let Some(e) = n.db.keys.get_mut(FENCE_KEY) {
                        if let Value::Str(v) = &mut e.value {
                            *v = tokens.get(v.parse().unwrap_or(0)).to_string();
                        }
                    }
                    if self.value == ValueKind::Timestamp {
                        if let Some(Value::Str(v)) =
                            n.db.keys.get_mut(LOCK_KEY).map(|e| &mut e.value)
                        {
                            *v = restamp(values::value(v), &stamps).to_string();
                        }
                    }
                    for entry in &mut n.stream {
                        entry.1 = r.exact(entry.1);
                    }
                } else {
                    n.db = Default::default();
                    n.creator = None;
                    n.stream.clear();
                }
                NodeRef::new(n)
            })
            .collect();
        s.nodes = nodes;
        s.resource.max_token = tokens.get(s.resource.max_token);
        s.resource
            .forget_counts(s.clients.iter_mut().map(|c| &mut c.read));
        self.reoffset(&mut s);
        s
    }

    /// The fencing counter's values in `s` — the counter on the nodes clients reach,
    /// the tokens holders present, the highest the resource saw — renumbered.
    fn tokens(&self, s: &RedisLockState) -> Ranks {
        let on_nodes = s
            .nodes
            .iter()
            .filter_map(|n| match n.db.keys.get(FENCE_KEY) {
                Some(e) => match &e.value {
                    Value::Str(v) => v.parse::<u64>().ok(),
                    Value::Hash(_) => None,
                },
                None => None,
            });
        let held = s
            .clients
            .iter()
            .filter(|c| c.phase.holding())
            .filter_map(|c| u64::try_from(c.token).ok());
        Ranks::of(on_nodes.chain(held).chain([s.resource.max_token]), 1)
    }

    /// The timestamps clients wrote as their values that `s` still holds, older than
    /// now, each to its place below the rebased clock (newest just below it); one
    /// written now stays now, as another client may write the same one this tick.
    fn stamps(&self, s: &RedisLockState, r: &Rebase) -> Vec<(u64, u64)> {
        if self.value != ValueKind::Timestamp {
            return Vec::new();
        }
        let on_nodes =
            s.nodes
                .iter()
                .filter_map(|n| match n.db.keys.get(LOCK_KEY).map(|e| &e.value) {
                    Some(Value::Str(v)) => Some(v.as_str()),
                    _ => None,
                });
        let mut old: Vec<u64> = s
            .clients
            .iter()
            .map(|c| c.value.text())
            .chain(on_nodes)
            .filter_map(|v| v.parse::<u64>().ok())
            .filter(|&t| t < s.now)
            .collect();
        old.sort_unstable();
        old.dedup();
        let mut map: Vec<(u64, u64)> = old
            .iter()
            .rev()
            .zip(1..)
            .map(|(&t, k)| (t, r.now().saturating_sub(k)))
            .collect();
        map.push((s.now, r.now()));
        map
    }

    /// Writes counted since the master's promotion, moved down together with the
    /// offsets `WAIT`s wait for, as far as the least offset any replica or waiter is
    /// at: `WAIT` counts only differences.
    fn reoffset(&self, s: &mut RedisLockState) {
        let master = s.master as usize;
        let behind = s
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| *i != master && n.up)
            .map(|(_, n)| s.offset.saturating_sub(n.stream.len() as u32));
        let epoch = s.epoch;
        let waiting = s
            .clients
            .iter()
            .filter(|c| c.phase == Phase::Wait && c.wait_for.0 == epoch)
            .map(|c| c.wait_for.1);
        let least = behind
            .chain(waiting)
            .min()
            .unwrap_or(s.offset)
            .min(s.offset);
        s.offset -= least;
        for c in s.clients.iter_mut() {
            if c.phase == Phase::Wait && c.wait_for.0 == epoch {
                c.wait_for.1 -= least;
            }
        }
    }
}

/// A timestamp value renamed by `stamps` (see [`RedisLockModel::stamps`]).
fn restamp(v: &'static str, stamps: &[(u64, u64)]) -> &'static str {
    match v.parse::<u64>() {
        Ok(t) => stamps
            .iter()
            .find(|(from, _)| *from == t)
            .map_or(v, |(_, to)| values::value(&to.to_string())),
        Err(_) => v,
    }
}
