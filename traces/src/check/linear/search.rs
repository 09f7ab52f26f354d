//! locklab's own linearizability search: the longest linearizable order of a partition
//! that porcupine-rs already proved illegal, and the whole verdict for lock histories.
//!
//! It is the search of porcupine-rs (Wing & Gong with Lowe's cache: calls and returns
//! ordered alike, the same model step, the same pruning of a linearized set and state
//! seen before), with three things porcupine-rs lacks:
//! - the set of linearized operations is hashed incrementally and the cache keeps its
//!   keys in one flat array instead of a heap allocation each;
//! - a budget of time and memory, past which the answer is "out of budget", never a
//!   verdict;
//! - optionally, *read-only commitment*: an operation whose answer never changes the
//!   state ([`Spec::read_only`]) and that fits every state of the current set is
//!   linearized at once, with no alternative tried at that point. Moving such an
//!   operation to the front of any completion keeps the completion valid (it is
//!   callable now, so real time allows it; it leaves the state set as it is, and later
//!   it could only have narrowed it), so a node whose committed successor fails fails
//!   too. A lock history is mostly refused tries ("busy") while someone holds the lock:
//!   committed this way, they cost one step each instead of a branch per order.
//!
//! Without commitment its longest order is one porcupine-rs's info variant could have
//! reported (ties may be broken differently); with it, the order is still valid but may
//! be shorter, which only matters for explanations.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use locklab_models::spec::{Spec, Window};
use rustc_hash::FxHasher;

use super::{clamp, successor_set, LinOp, StateSet};

/// The longest order of `ops` (indices) the spec accepts, or `None` if every operation
/// linearizes after all (the caller's verdict then came from elsewhere, and it asks
/// porcupine-rs instead).
pub(super) fn longest<S: Spec>(ops: &[LinOp<S>]) -> Option<Vec<usize>> {
    match Search::new(ops, false).run(&Budget::unlimited()) {
        Ended::Linearizable => None,
        Ended::Illegal(order) => Some(order),
        // An unlimited budget never runs out.
        Ended::OutOfBudget(_) => None,
    }
}

/// Decides one partition within `budget`, committing read-only operations.
pub fn decide<S: Spec>(ops: &[LinOp<S>], budget: &Budget) -> Ended {
    Search::new(ops, true).run(budget)
}

/// How much a search may spend.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// No step after this instant.
    pub deadline: Option<Instant>,
    /// The cache never grows past this many bytes.
    pub max_bytes: usize,
}

impl Budget {
    /// No limit at all.
    pub fn unlimited() -> Self {
        Budget {
            deadline: None,
            max_bytes: usize::MAX,
        }
    }
}

/// Why a budget ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhausted {
    /// The deadline passed.
    Time,
    /// The cache reached its memory limit.
    Memory,
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every operation linearized.
    Linearizable,
    /// No order exists; the longest order found (indices).
    Illegal(Vec<usize>),
    /// The budget ran out first: no verdict.
    OutOfBudget(Exhausted),
}

/// A call or a return, as an index into the operations: calls are even, returns odd.
type Entry = usize;

/// The cache of (linearized set, state) pairs already explored.
///
/// The map goes from a pair's hash to the last pair stored with it; pairs sharing a hash
/// are chained through `chain`. A set is kept as the number of leading words wholly
/// linearized and the words after them up to its last member: operations are numbered
/// in the order they were invoked and the search goes forward in time, so a set is a
/// long run of ones and a short ragged tail, a few words where the whole set of a
/// 50,000-operation history would take 800.
struct Seen<T> {
    heads: HashMap<u64, u32, BuildHasherDefault<FxHasher>>,
    chain: Vec<u32>,
    /// Per pair: full leading words, where its tail starts in `words`, tail length.
    keys: Vec<(u32, u32, u32)>,
    words: Vec<u64>,
    /// Shared with the search's current state and its stack: a 50,000-operation
    /// history lifts 50,000 states, each a whole keyspace, and copies of them were half
    /// of a check's memory.
    states: Vec<Arc<StateSet<T>>>,
}

const NONE: u32 = u32::MAX;

impl<T: Eq + Clone> Seen<T> {
    fn new() -> Self {
        Seen {
            heads: HashMap::default(),
            chain: Vec::new(),
            keys: Vec::new(),
            words: Vec::new(),
            states: Vec::new(),
        }
    }

    /// What the cache holds, in bytes (close enough to hold a budget to).
    fn bytes(&self) -> usize {
        self.words.len() * 8
            + self.states.len() * (std::mem::size_of::<StateSet<T>>() + 32)
            + self.heads.len() * 16
    }

    /// Records the pair of the set `(full, tail)` and `state`; false if it was already
    /// there.
    fn insert(&mut self, hash: u64, full: u32, tail: &[u64], state: &Arc<StateSet<T>>) -> bool {
        let head = self.heads.entry(hash).or_insert(NONE);
        let mut at = *head;
        while at != NONE {
            let i = at as usize;
            let (f, start, len) = self.keys[i];
            if f == full
                && self.words[start as usize..][..len as usize] == *tail
                && *self.states[i] == **state
            {
                return false;
            }
            at = self.chain[i];
        }
        let (Ok(index), Ok(start), Ok(len)) = (
            u32::try_from(self.states.len()),
            u32::try_from(self.words.len()),
            u32::try_from(tail.len()),
        ) else {
            // More than an index can name: forget the pruning rather than fail; the
            // search stays correct, only slower.
            return true;
        };
        if index == NONE {
            return true;
        }
        self.chain.push(*head);
        *head = index;
        self.keys.push((full, start, len));
        self.words.extend_from_slice(tail);
        self.states.push(Arc::clone(state));
        true
    }
}

/// A lifted operation: what to restore when it is taken back.
struct Frame<T> {
    op: usize,
    before: Arc<StateSet<T>>,
    /// Committed as read-only: no alternative is tried in its place.
    committed: bool,
}

struct Search<'a, S: Spec> {
    ops: &'a [LinOp<S>],
    /// Which operations may be committed (read-only answers), when commitment is on.
    read_only: Vec<bool>,
    /// Per operation, its twin called before it, if any: the same input, no answer and
    /// no return (an `info`). Twins are interchangeable and the earlier one can go
    /// wherever the later one can (its window holds the other's), so a linearization
    /// that lifts the later first becomes one that does not by swapping them, and only
    /// the orders that lift twins in call order are searched. A run of n unanswered
    /// `SET NX` of one client (a failover's outage) then costs n + 1 subsets, not 2^n.
    twin_before: Vec<Option<usize>>,
    windows: Vec<Window>,
    /// The entries still to linearize, as a doubly linked list through `next` and
    /// `prev`, with the sentinel `head` at index `2 * ops.len()`.
    next: Vec<Entry>,
    prev: Vec<Entry>,
    head: Entry,
    linearized: Vec<u64>,
    /// How many leading words of `linearized` are all ones.
    full: usize,
    /// One past the highest word that ever had a member (a bound on the last member).
    high: usize,
    /// The tail of a probed set, reused between probes.
    tail: Vec<u64>,
    /// The linearized set's hash, kept up to date with one xor per change.
    linearized_hash: u64,
    /// Each operation's share of that hash.
    op_hashes: Vec<u64>,
    state: Arc<StateSet<S::State>>,
    stack: Vec<Frame<S::State>>,
    seen: Seen<S::State>,
    longest: Vec<usize>,
}

/// For each operation without answer and return, the latest one called before it with
/// the same input and no answer or return either (see `Search::twin_before`).
pub(super) fn twins<S: Spec>(ops: &[LinOp<S>]) -> Vec<Option<usize>> {
    let open = |op: &LinOp<S>| op.output.is_none() && op.ret.is_none();
    let mut order: Vec<usize> = (0..ops.len()).filter(|&i| open(&ops[i])).collect();
    order.sort_by_key(|&i| (clamp(ops[i].call), i));
    let mut twin = vec![None; ops.len()];
    // Quadratic in the open operations of one partition, which are few next to the rest.
    for (k, &j) in order.iter().enumerate() {
        twin[j] = order[..k]
            .iter()
            .rev()
            .find(|&&i| ops[i].input == ops[j].input)
            .copied();
    }
    twin
}

/// A well-mixed word per operation (splitmix64), so that the xor of those of a set is a
/// good hash of the set.
fn op_hash(op: usize) -> u64 {
    let mut z = (op as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<'a, S: Spec> Search<'a, S> {
    fn new(ops: &'a [LinOp<S>], commit: bool) -> Self {
        let n = ops.len();
        // porcupine-rs's order: by time, a call before a return at the same instant (so
        // they overlap), otherwise in the order of the operations.
        let mut order: Vec<(i64, bool, Entry)> = ops
            .iter()
            .enumerate()
            .flat_map(|(i, op)| {
                [
                    (clamp(op.call), false, 2 * i),
                    (op.ret.map_or(i64::MAX, clamp), true, 2 * i + 1),
                ]
            })
            .collect();
        order.sort_by_key(|&(time, is_return, _)| (time, is_return));
        let head = 2 * n;
        let mut next = vec![head; 2 * n + 1];
        let mut prev = vec![head; 2 * n + 1];
        let mut last = head;
        for &(_, _, e) in &order {
            next[last] = e;
            prev[e] = last;
            last = e;
        }
        next[last] = head;
        prev[head] = last;
        let width = n.div_ceil(64);
        Search {
            ops,
            read_only: ops
                .iter()
                .map(|op| {
                    commit
                        && op
                            .output
                            .as_ref()
                            .is_some_and(|out| op.spec.read_only(&op.input, out))
                })
                .collect(),
            twin_before: twins(ops),
            windows: ops.iter().map(LinOp::window).collect(),
            next,
            prev,
            head,
            linearized: vec![0; width],
            full: 0,
            high: 0,
            tail: Vec::new(),
            linearized_hash: 0,
            op_hashes: (0..n).map(op_hash).collect(),
            state: Arc::new(StateSet::Start),
            stack: Vec::new(),
            seen: Seen::new(),
            longest: Vec::new(),
        }
    }

    fn unlink(&mut self, e: Entry) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    /// Undoes the latest `unlink` not yet undone (`e`'s neighbours still point past it).
    fn relink(&mut self, e: Entry) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        self.prev[n] = e;
    }

    fn flip(&mut self, op: usize) {
        let w = op / 64;
        self.linearized[w] ^= 1 << (op % 64);
        self.linearized_hash ^= self.op_hashes[op];
        if self.linearized[w] & (1 << (op % 64)) != 0 {
            self.high = self.high.max(w + 1);
            while self.full < self.linearized.len() && self.linearized[self.full] == !0 {
                self.full += 1;
            }
        } else if w < self.full {
            self.full = w;
        }
    }

    /// The linearized set with `op` added, as the cache keeps sets: the count of full
    /// leading words, and the tail (left in `self.tail`).
    fn key_with(&mut self, op: usize) -> u32 {
        let (w, bit) = (op / 64, 1u64 << (op % 64));
        let words = &self.linearized;
        let word = |i: usize| if i == w { words[i] | bit } else { words[i] };
        let mut full = self.full;
        while full < words.len() && word(full) == !0 {
            full += 1;
        }
        let mut top = self.high.max(w + 1);
        while top > full && word(top - 1) == 0 {
            top -= 1;
        }
        self.tail.clear();
        self.tail.extend((full..top).map(word));
        u32::try_from(full).unwrap_or(u32::MAX)
    }

    /// Lifts `op` (whose call entry is `at`) with `after` as the new state, unless the
    /// cache has seen that pair; returns whether it did.
    fn lift(&mut self, at: Entry, after: StateSet<S::State>, committed: bool) -> bool {
        let op = at / 2;
        let mut h = FxHasher::default();
        after.hash(&mut h);
        let hash = h.finish() ^ self.linearized_hash ^ self.op_hashes[op];
        let full = self.key_with(op);
        let after = Arc::new(after);
        if !self.seen.insert(hash, full, &self.tail, &after) {
            return false;
        }
        self.flip(op);
        let before = std::mem::replace(&mut self.state, after);
        self.stack.push(Frame {
            op,
            before,
            committed,
        });
        self.unlink(at);
        self.unlink(at + 1);
        true
    }

    /// Whether `op` must wait for its earlier twin to be linearized first.
    fn twin_waits(&self, op: usize) -> bool {
        self.twin_before[op].is_some_and(|t| self.linearized[t / 64] & (1 << (t % 64)) == 0)
    }

    /// A callable read-only operation that fits every current state, with the state set
    /// it leaves (the same set).
    fn committable(&self) -> Option<(Entry, StateSet<S::State>)> {
        let mut at = self.next[self.head];
        while at != self.head && at.is_multiple_of(2) {
            let op = at / 2;
            if self.read_only[op] {
                if let Some(after) = successor_set(&self.state, &self.ops[op], self.windows[op]) {
                    if after == *self.state {
                        return Some((at, after));
                    }
                }
            }
            at = self.next[at];
        }
        None
    }

    /// Takes back the latest lifted operation and every committed one below it (a node
    /// whose committed successor failed has failed too); returns the entry to try next,
    /// or `None` when nothing is left to take back.
    fn backtrack(&mut self) -> Option<Entry> {
        if self.stack.len() > self.longest.len() {
            self.longest = self.stack.iter().map(|f| f.op).collect();
        }
        loop {
            let frame = self.stack.pop()?;
            self.relink(2 * frame.op + 1);
            self.relink(2 * frame.op);
            self.flip(frame.op);
            self.state = frame.before;
            if !frame.committed {
                return Some(self.next[2 * frame.op]);
            }
        }
    }

    fn run(mut self, budget: &Budget) -> Ended {
        let mut steps: u32 = 0;
        // The cache's own count misses what its states hold on the heap (a set of
        // hundreds of Redis keyspaces is one entry), so the process's growth is watched
        // too, now and then: reading it costs a system call.
        let watch_rss = budget.max_bytes != usize::MAX;
        let rss_start = if watch_rss {
            super::resident_bytes().unwrap_or(0)
        } else {
            0
        };
        // At a node reached by a lift, a committable operation goes first.
        let mut fresh = true;
        let mut at = self.next[self.head];
        while at != self.head {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(1024) {
                if budget.deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ended::OutOfBudget(Exhausted::Time);
                }
                if self.seen.bytes() > budget.max_bytes {
                    return Ended::OutOfBudget(Exhausted::Memory);
                }
                if watch_rss
                    && steps.is_multiple_of(1 << 16)
                    && super::resident_bytes()
                        .unwrap_or(0)
                        .saturating_sub(rss_start)
                        > budget.max_bytes
                {
                    return Ended::OutOfBudget(Exhausted::Memory);
                }
            }
            if fresh {
                fresh = false;
                if let Some((entry, after)) = self.committable() {
                    if self.lift(entry, after, true) {
                        fresh = true;
                        at = self.next[self.head];
                        continue;
                    }
                    // Seen before, so failed before: this node fails with it.
                    match self.backtrack() {
                        Some(next) => at = next,
                        None => return Ended::Illegal(self.longest),
                    }
                    continue;
                }
            }
            if at.is_multiple_of(2) && self.twin_waits(at / 2) {
                at = self.next[at];
            } else if at.is_multiple_of(2) {
                let op = at / 2;
                if let Some(after) = successor_set(&self.state, &self.ops[op], self.windows[op]) {
                    if self.lift(at, after, false) {
                        fresh = true;
                        at = self.next[self.head];
                        continue;
                    }
                }
                at = self.next[at];
            } else {
                // An operation that must precede every other still to come, and no order
                // of the stacked ones lets it in: a dead end.
                match self.backtrack() {
                    Some(next) => at = next,
                    None => return Ended::Illegal(self.longest),
                }
            }
        }
        Ended::Linearizable
    }
}

#[cfg(test)]
mod tests;
