//! A check that a model's [`Progress::reduce`] loses nothing: the graph stores each
//! state as its reduced form, so a reduction that merged two states with different
//! futures could invent a lasso or hide one. On random walks from the initial states,
//! every state met must have the same steps as its reduced form — the same fairness
//! classes leading to the same reduced successors.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

use super::graph::print;
use super::{Class, Progress};

/// What a state's steps lead to, as the graph would store them: each step's class and
/// its reduced successor's fingerprint; a step back to the state itself (rebased, a
/// tick where nothing was timed is one) counts as no step, as both are the same to a
/// fair cycle.
fn steps<M>(model: &M, s: &M::State, buf: &mut Vec<u8>) -> BTreeSet<(Option<Class>, [u64; 2])>
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let here = print(&model.reduce(s.clone()), buf);
    let mut actions = Vec::new();
    model.actions(s, &mut actions);
    actions
        .into_iter()
        .filter_map(|a| {
            let class = model.fairness(&a);
            let t = model.next_state(s, a)?;
            model
                .within_boundary(&t)
                .then(|| (class, print(&model.reduce(t), buf)))
        })
        .filter(|(_, t)| *t != here)
        .collect()
}

/// Checks `model`'s reduction on `walks` random walks of up to `depth` steps each
/// (seeded by `seed`, so a failure replays): at every state met, the state and its
/// reduced form must have the same steps ([`steps`]). Returns how many states were
/// compared, or the first that differs, with its reduced form.
pub fn reduce_commutes<M>(model: &M, walks: usize, depth: usize, seed: u64) -> Result<usize, String>
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut rng = seed | 1;
    let mut next = move || {
        // xorshift64: a walk needs reproducible choices, not good randomness.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut buf = Vec::new();
    let mut compared = 0;
    let inits = model.init_states();
    for _ in 0..walks {
        let Some(mut s) = inits.get(next() as usize % inits.len().max(1)).cloned() else {
            return Ok(compared);
        };
        for _ in 0..depth {
            let reduced = model.reduce(s.clone());
            if steps(model, &s, &mut buf) != steps(model, &reduced, &mut buf) {
                return Err(format!(
                    "the state and its reduced form have different steps\n  state: {s:?}\n  reduced: {reduced:?}"
                ));
            }
            compared += 1;
            let mut actions = Vec::new();
            model.actions(&s, &mut actions);
            let succs: Vec<M::State> = actions
                .into_iter()
                .filter_map(|a| model.next_state(&s, a))
                .filter(|t| model.within_boundary(t))
                .collect();
            if succs.is_empty() {
                break;
            }
            // Half the time from the reduced form on: the graph expands those.
            let t = succs[next() as usize % succs.len()].clone();
            s = if next() % 2 == 0 { model.reduce(t) } else { t };
        }
    }
    Ok(compared)
}
