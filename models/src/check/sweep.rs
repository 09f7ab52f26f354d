//! The bitstate sweep (as Spin's `-DBITSTATE`): for state spaces far past memory, a
//! depth-first search that remembers a state only as three bits of a fixed bit array.
//!
//! A state whose three bits are all set already counts as visited, whether or not it
//! was: the sweep may skip part of the graph, and says so (never "holds"). What it
//! finds it proves: the stack is a path of the model's own steps from an initial
//! state, and the last state on it breaks the property. Depth first, that path is a
//! counterexample, not always the shortest. One thread: the array and the stack are
//! the whole memory, a few bytes per million states' worth of bits.

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use stateright::Model;

use super::{encode, resident_bytes, stored_form, Discovery, Limits, Outcome, Stats, Stop, Store};
use super::{Symmetry, REPORT_EVERY};

/// The bit array.
struct Bits {
    words: Vec<u64>,
    mask: u64,
    /// States that set at least one new bit.
    stored: usize,
}

impl Bits {
    fn new(log2_bits: u32) -> Bits {
        let bits = 1u64 << log2_bits.clamp(6, 40);
        Bits {
            words: vec![0; (bits / 64) as usize],
            mask: bits - 1,
            stored: 0,
        }
    }

    /// Sets the state's three bits; whether any was clear (a state not seen before,
    /// unless this returns `false` for one whose bits others set).
    fn insert(&mut self, fp: [u64; 2]) -> bool {
        let mut fresh = false;
        for h in [fp[0], fp[1], fp[0].rotate_left(32) ^ fp[1].rotate_right(17)] {
            let bit = h & self.mask;
            let (word, b) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            fresh |= self.words[word] & b == 0;
            self.words[word] |= b;
        }
        self.stored += usize::from(fresh);
        fresh
    }
}

/// One state on the stack, with the actions out of it not taken yet (last first): its
/// successors are made one at a time, so a deep stack holds one state per level.
struct Frame<M: Model> {
    reached_by: Option<M::Action>,
    state: M::State,
    next: Vec<M::Action>,
}

/// Sweeps `model` depth first over a bit array of 2^`log2_bits` bits.
pub(super) fn sweep<M>(
    model: &M,
    limits: Limits,
    log2_bits: u32,
    progress: &mut dyn FnMut(&Stats),
) -> Outcome<M>
where
    M: Symmetry,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let start = Instant::now();
    let rss_start = limits.max_bytes.and_then(|_| resident_bytes());
    let properties = super::invariants(model);
    let mut discoveries: Vec<Option<Discovery<M>>> = properties.iter().map(|_| None).collect();
    let mut bits = Bits::new(log2_bits);
    let mut stats = Stats::default();
    let mut stopped = None;
    let mut encoding = Vec::new();
    let mut stack: Vec<Frame<M>> = Vec::new();
    let mut report_at = REPORT_EVERY;

    // Checks a state reached, and pushes it if it is new and inside the boundary.
    let mut reach = |stack: &mut Vec<Frame<M>>,
                     discoveries: &mut Vec<Option<Discovery<M>>>,
                     reached_by: Option<M::Action>,
                     state: M::State| {
        encoding.clear();
        stored_form(model, &state, limits.symmetry, &mut encoding);
        if !bits.insert(encode::fingerprint(&encoding)) {
            return bits.stored;
        }
        for (found, (property, p)) in discoveries.iter_mut().zip(&properties) {
            if found.is_none() && !(p.condition)(model, &state) {
                let mut path: Vec<_> = stack
                    .iter()
                    .map(|f| (f.reached_by.clone(), f.state.clone()))
                    .collect();
                path.push((reached_by.clone(), state.clone()));
                *found = Some(Discovery {
                    property: *property,
                    path,
                });
            }
        }
        if model.within_boundary(&state) {
            let mut next = Vec::new();
            model.actions(&state, &mut next);
            next.reverse();
            stack.push(Frame {
                reached_by,
                state,
                next,
            });
        }
        bits.stored
    };

    let mut stored = 0;
    for init in model.init_states() {
        stats.states += 1;
        stored = reach(&mut stack, &mut discoveries, None, init);
    }
    loop {
        if discoveries.iter().all(Option::is_some) {
            break;
        }
        let Some(top) = stack.last_mut() else { break };
        let Some(a) = top.next.pop() else {
            stack.pop();
            continue;
        };
        let Some(s) = model.next_state(&top.state, a.clone()) else {
            continue;
        };
        stats.states += 1;
        stored = reach(&mut stack, &mut discoveries, Some(a), s);
        stats.max_depth = stats.max_depth.max(stack.len());
        if stored >= limits.max_states {
            stopped = Some(Stop::States);
            break;
        }
        if stats.states >= report_at {
            report_at = stats.states + REPORT_EVERY;
            stats.unique_states = stored;
            stats.queue = stack.len();
            stats.seconds = start.elapsed().as_secs_f64();
            progress(&stats);
            if let Some(stop) = Stop::of_time(&limits, start.elapsed()) {
                stopped = Some(stop);
                break;
            }
            let grown = rss_start.and_then(|s0| resident_bytes().map(|r| r.saturating_sub(s0)));
            if limits.max_bytes.zip(grown).is_some_and(|(max, g)| g > max) {
                stopped = Some(Stop::Memory);
                break;
            }
        }
    }
    if stack.is_empty() {
        stopped = None;
    }
    stats.unique_states = stored;
    stats.queue = stack.len();
    stats.seconds = start.elapsed().as_secs_f64();
    Outcome {
        complete: stopped.is_none(),
        stopped,
        stats,
        discoveries: discoveries.into_iter().flatten().collect(),
        store: Store::Bitstate { log2_bits },
        collision_bound: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_new_once() {
        let mut bits = Bits::new(20);
        let fp = encode::fingerprint(b"a state");
        assert!(bits.insert(fp));
        assert!(!bits.insert(fp));
        assert_eq!(bits.stored, 1);
    }
}
