//! The verdict on a partition with its operations taken in time order, keeping only
//! what the operations still pending need: Lowe's just-in-time linearization, run as a
//! set of configurations (Lowe, "Testing for linearizability", 2017).
//!
//! A configuration is a state the linearized prefix may have left and which of the
//! pending operations (called, not yet returned) it has already linearized. A call adds
//! an operation to the pending ones; a return forces it: from every configuration,
//! every way of linearizing pending operations that ends with it linearized is taken,
//! and the configurations where it cannot be are dropped. No configuration left: no
//! linearization exists, and the operation whose return found none is where the history
//! stops being linearizable. A finished operation is forgotten, so the memory is that of
//! the configurations and the pending operations, not of the history: the search of
//! [`super::search`] keeps a state and a cache entry for every operation it lifted,
//! 300 bytes an operation of a lock history and 800 of a Redis one.
//!
//! The search's two shortcuts hold here too. A read-only operation (a refused try, a
//! read) that fits a configuration's state is linearized in it at once, with no
//! configuration kept where it is not: moved to the front of any completion it keeps
//! the completion valid. And of two pending twins (an unanswered operation with the
//! same input as one called before it), only the earlier is linearized first.
//!
//! The answer is exact, never a guess: a budget or a bound on the configurations ends
//! it with [`Streamed::Unknown`] or [`Streamed::Wide`] (too many configurations, or
//! too many steps in all), after which the caller searches.

use std::time::Instant;

use locklab_models::spec::Spec;
use rustc_hash::FxHashSet;
use smallvec::SmallVec;

use super::search::{twins, Budget, Exhausted};
use super::{clamp, successors, LinOp};

/// How the streamed check ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Streamed {
    /// Every operation linearized.
    Linearizable,
    /// No linearization exists: the operation (an index) whose return no
    /// configuration could meet.
    Illegal(usize),
    /// The budget's deadline passed first.
    Unknown(Exhausted),
    /// More configurations than the bound: the history is too concurrent to stream
    /// (many unanswered operations); the search decides it instead.
    Wide,
}

/// The most configurations kept at once.
const WIDTH: usize = 4096;
/// The most steps the returns may take in all, per operation and beyond a start: a
/// history whose returns each need many keeps the search's time, not twice it.
const STEPS_PER_OP: usize = 64;
const STEPS_START: usize = 1 << 16;

/// A state and the pending operations already linearized in it (sorted indices).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Config<T> {
    state: T,
    early: SmallVec<[u32; 4]>,
}

impl<T> Config<T> {
    fn has(&self, op: usize) -> bool {
        self.early.binary_search(&(op as u32)).is_ok()
    }

    fn add(&mut self, op: usize) {
        let op = op as u32;
        if let Err(at) = self.early.binary_search(&op) {
            self.early.insert(at, op);
        }
    }

    fn remove(&mut self, op: usize) {
        if let Ok(at) = self.early.binary_search(&(op as u32)) {
            self.early.remove(at);
        }
    }
}

struct Stream<'a, S: Spec> {
    ops: &'a [LinOp<S>],
    read_only: Vec<bool>,
    twin_before: Vec<Option<usize>>,
    /// Called and not yet returned, in call order.
    pending: Vec<usize>,
    /// Steps left before the stream steps aside.
    steps: usize,
}

impl<S: Spec> Stream<'_, S> {
    /// The state `op` leaves `state` in, if it fits it and leaves it as it was.
    fn fits_unchanged(&self, state: &S::State, op: usize) -> bool {
        let next = successors(std::slice::from_ref(state), &self.ops[op]);
        next.len() == 1 && next[0] == *state
    }

    /// Linearizes in `c` every pending read-only operation that fits its state.
    fn absorb(&self, c: &mut Config<S::State>) {
        for &p in &self.pending {
            if self.read_only[p] && !c.has(p) && self.fits_unchanged(&c.state, p) {
                c.add(p);
            }
        }
    }

    /// Whether `op` may be linearized next in `c`: pending, not yet linearized, not
    /// read-only (those are absorbed where they fit), and not waiting for its twin.
    fn candidate(&self, c: &Config<S::State>, op: usize) -> bool {
        // A twin never returns: pending to the history's end, where neither is forced.
        !self.read_only[op] && !c.has(op) && self.twin_before[op].is_none_or(|t| c.has(t))
    }

    /// Every configuration reachable from `start` that has `op` linearized, with `op`
    /// then forgotten, into `out`; false when the closure grew past its bound.
    fn force(
        &mut self,
        start: Config<S::State>,
        op: usize,
        out: &mut FxHashSet<Config<S::State>>,
    ) -> bool {
        let mut stack = vec![start];
        let mut seen: FxHashSet<Config<S::State>> = FxHashSet::default();
        while let Some(c) = stack.pop() {
            for k in 0..self.pending.len() {
                let j = self.pending[k];
                if !self.candidate(&c, j) {
                    continue;
                }
                let Some(left) = self.steps.checked_sub(1) else {
                    return false;
                };
                self.steps = left;
                for state in successors(std::slice::from_ref(&c.state), &self.ops[j]) {
                    let mut next = Config {
                        state,
                        early: c.early.clone(),
                    };
                    next.add(j);
                    self.absorb(&mut next);
                    if next.has(op) {
                        next.remove(op);
                        out.insert(next);
                    } else if seen.insert(next.clone()) {
                        stack.push(next);
                    }
                }
            }
        }
        true
    }
}

/// Decides `ops` as a stream, within `budget`'s deadline.
pub fn decide<S: Spec>(ops: &[LinOp<S>], budget: &Budget) -> Streamed {
    let Some(first) = ops.first() else {
        return Streamed::Linearizable;
    };
    let mut stream = Stream {
        ops,
        read_only: ops
            .iter()
            .map(|op| {
                op.output
                    .as_ref()
                    .is_some_and(|out| op.spec.read_only(&op.input, out))
            })
            .collect(),
        twin_before: twins(ops),
        pending: Vec::new(),
        steps: STEPS_START.saturating_add(STEPS_PER_OP.saturating_mul(ops.len())),
    };
    // The search's order: by time, a call before a return at the same instant (they
    // overlap), otherwise in the order of the operations; a return that never comes
    // is at the end.
    let mut order: Vec<(i64, bool, usize)> = ops
        .iter()
        .enumerate()
        .flat_map(|(i, op)| {
            [
                (clamp(op.call), false, i),
                (op.ret.map_or(i64::MAX, clamp), true, i),
            ]
        })
        .collect();
    // Between equal times and kinds, in the order of the operations: the whole
    // entry is the key, so the sort needs no buffer (a long run's million commands).
    order.sort_unstable();
    let mut configs: FxHashSet<Config<S::State>> = FxHashSet::default();
    configs.insert(Config {
        state: first.spec.init(),
        early: SmallVec::new(),
    });
    for (k, &(_, is_return, op)) in order.iter().enumerate() {
        if k % 4096 == 0 && budget.deadline.is_some_and(|d| Instant::now() >= d) {
            return Streamed::Unknown(Exhausted::Time);
        }
        if !is_return {
            stream.pending.push(op);
            if stream.read_only[op] {
                configs = configs
                    .into_iter()
                    .map(|mut c| {
                        if stream.fits_unchanged(&c.state, op) {
                            c.add(op);
                        }
                        c
                    })
                    .collect();
            }
            continue;
        }
        let mut next: FxHashSet<Config<S::State>> = FxHashSet::default();
        let unanswered = ops[op].output.is_none() && ops[op].ret.is_none();
        for mut c in configs {
            if c.has(op) || unanswered {
                // An operation of unknown outcome may never have taken effect: at its
                // return (or the history's end) nothing forces it.
                c.remove(op);
                next.insert(c);
            } else if !stream.force(c, op, &mut next) {
                return Streamed::Wide;
            }
        }
        if let Some(at) = stream.pending.iter().position(|&p| p == op) {
            stream.pending.remove(at);
        }
        if next.is_empty() {
            return Streamed::Illegal(op);
        }
        if next.len() > WIDTH {
            return Streamed::Wide;
        }
        configs = next;
    }
    Streamed::Linearizable
}

#[cfg(test)]
mod tests;
