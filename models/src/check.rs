//! The search behind every verdict: a breadth-first search over a stateright [`Model`]
//! that keeps the *first* discovery of each property.
//!
//! stateright 0.31's own BFS overwrites a discovery whenever another thread or a later
//! state finds the same property, so its paths are not guaranteed shortest; this one
//! dequeues states in order of depth and checks each state when it is first reached, so
//! the first violating state of a property is at the least depth any violating state
//! has, and its parent chain is a shortest counterexample. States are deduplicated by a
//! 64-bit fingerprint of their canonical form ([`Narrate::canonical`], where a model
//! exploits symmetry); paths are rebuilt from concrete states, so stories never show a
//! permuted state.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::{Expectation, Model};

use crate::registry::Property;

/// What a model adds to stateright's [`Model`] so its counterexamples can be told.
pub trait Narrate: Model
where
    Self::State: Clone + Hash + Eq + Debug,
    Self::Action: Clone + Debug,
{
    /// A representative of the state's symmetry class (identity unless clients or
    /// nodes are interchangeable).
    fn canonical(&self, state: &Self::State) -> Self::State {
        state.clone()
    }

    /// One line per actor (clock, each client, each node, the resource).
    fn describe_state(&self, state: &Self::State) -> Vec<String>;

    /// What happened, in words.
    fn describe_action(&self, state: &Self::State, action: &Self::Action) -> String;

    /// Whether the action is an injected fault rather than normal behaviour.
    fn is_fault(&self, action: &Self::Action) -> bool;

    /// The closing line: why the property broke, read off the path.
    fn why(&self, property: Property, path: &[(Option<Self::Action>, Self::State)]) -> String;
}

/// Limits on a search; reaching one before the answer makes the verdict unknown.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Stop after this many unique states.
    pub max_states: usize,
    /// Stop after this much time.
    pub timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_states: 5_000_000,
            timeout: None,
        }
    }
}

/// Counts, for the report and the benchmark.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Stats {
    /// Successor states generated (with duplicates).
    pub states: usize,
    /// Distinct states (after symmetry reduction).
    pub unique_states: usize,
    /// Depth of the deepest level reached.
    pub max_depth: usize,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl Stats {
    /// Generated states per second.
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.states as f64 / self.seconds
        } else {
            self.states as f64
        }
    }
}

/// One property's shortest counterexample: the path from an initial state.
pub struct Discovery<M: Model> {
    /// The violated property.
    pub property: Property,
    /// `(action that led here, state)`; the first entry is an initial state.
    pub path: Vec<(Option<M::Action>, M::State)>,
}

/// The result of a search.
pub struct Outcome<M: Model> {
    /// Every explored state was checked (no limit cut the search short).
    pub complete: bool,
    /// The counters.
    pub stats: Stats,
    /// One shortest counterexample per violated `always` property, in property order.
    pub discoveries: Vec<Discovery<M>>,
}

fn fingerprint<T: Hash>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// Explores `model` breadth-first; `progress` gets the unique-state count now and then.
pub fn bfs<M>(model: &M, limits: Limits, progress: &mut dyn FnMut(&Stats)) -> Outcome<M>
where
    M: Narrate,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let start = Instant::now();
    // Models name their invariants through `Property::always`, so each maps back.
    let properties: Vec<_> = model
        .properties()
        .into_iter()
        .filter(|p| matches!(p.expectation, Expectation::Always))
        .filter_map(|p| Property::of(&p).map(|named| (named, p)))
        .collect();
    let mut found: Vec<Option<u64>> = vec![None; properties.len()];
    // fingerprint → parent fingerprint (None for initial states).
    let mut parents: HashMap<u64, Option<u64>> = HashMap::new();
    let mut queue: VecDeque<(M::State, u64, usize)> = VecDeque::new();
    let mut stats = Stats::default();
    let mut complete = true;

    let visit = |state: M::State,
                 parent: Option<u64>,
                 depth: usize,
                 parents: &mut HashMap<u64, Option<u64>>,
                 queue: &mut VecDeque<(M::State, u64, usize)>,
                 found: &mut Vec<Option<u64>>| {
        let canon = model.canonical(&state);
        let fp = fingerprint(&canon);
        if parents.contains_key(&fp) {
            return;
        }
        parents.insert(fp, parent);
        for (i, (_, p)) in properties.iter().enumerate() {
            if found[i].is_none() && !(p.condition)(model, &state) {
                found[i] = Some(fp);
            }
        }
        if model.within_boundary(&state) {
            queue.push_back((state, fp, depth));
        }
    };

    for s in model.init_states() {
        stats.states += 1;
        visit(s, None, 0, &mut parents, &mut queue, &mut found);
    }
    let mut next = Vec::new();
    while let Some((state, fp, depth)) = queue.pop_front() {
        if found.iter().all(Option::is_some) {
            break;
        }
        stats.max_depth = stats.max_depth.max(depth);
        next.clear();
        model.next_states_into(&state, &mut next);
        for s in next.drain(..) {
            stats.states += 1;
            visit(s, Some(fp), depth + 1, &mut parents, &mut queue, &mut found);
        }
        stats.unique_states = parents.len();
        if stats.states % 4096 < 64 {
            stats.seconds = start.elapsed().as_secs_f64();
            progress(&stats);
        }
        let over_time = limits.timeout.is_some_and(|t| start.elapsed() > t);
        if parents.len() >= limits.max_states || over_time {
            complete = queue.is_empty();
            break;
        }
    }
    stats.unique_states = parents.len();
    stats.seconds = start.elapsed().as_secs_f64();

    let discoveries = properties
        .iter()
        .zip(&found)
        .filter_map(|((property, _), fp)| {
            fp.map(|fp| Discovery {
                property: *property,
                path: rebuild(model, &parents, fp),
            })
        })
        .collect();
    Outcome {
        complete,
        stats,
        discoveries,
    }
}

/// Walks the parent fingerprints back to an initial state, then replays forward from
/// concrete states, picking at each step a successor whose canonical fingerprint is the
/// next one on the chain.
fn rebuild<M>(
    model: &M,
    parents: &HashMap<u64, Option<u64>>,
    last: u64,
) -> Vec<(Option<M::Action>, M::State)>
where
    M: Narrate,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut chain = vec![last];
    let mut cur = last;
    while let Some(Some(p)) = parents.get(&cur) {
        chain.push(*p);
        cur = *p;
    }
    chain.reverse();
    let fp_of = |s: &M::State| fingerprint(&model.canonical(s));
    let mut path = Vec::with_capacity(chain.len());
    let Some(init) = model
        .init_states()
        .into_iter()
        .find(|s| fp_of(s) == chain[0])
    else {
        return path;
    };
    path.push((None, init));
    for want in &chain[1..] {
        let Some((_, prev)) = path.last() else { break };
        let mut actions = Vec::new();
        model.actions(prev, &mut actions);
        let step = actions
            .into_iter()
            .filter_map(|a| model.next_state(prev, a.clone()).map(|s| (a, s)))
            .find(|(_, s)| fp_of(s) == *want);
        match step {
            Some((a, s)) => path.push((Some(a), s)),
            None => break,
        }
    }
    path
}

/// Extension used by [`bfs`]: successors without the double action generation of
/// [`Model::next_states`].
trait NextInto: Model {
    fn next_states_into(&self, state: &Self::State, out: &mut Vec<Self::State>) {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        out.extend(
            actions
                .into_iter()
                .filter_map(|a| self.next_state(state, a)),
        );
    }
}

impl<M: Model> NextInto for M {}

/// Length (number of actions) of the shortest path to a state violating `property`,
/// found by iterative deepening: depth-limited DFS for limits 0, 1, 2, … up to
/// `max_depth`, remembering the largest remaining budget each state was reached with.
/// Independent of [`bfs`] (no canonicalisation, no queue), so tests can hold one
/// against the other.
pub fn iterative_deepening<M>(model: &M, property: Property, max_depth: usize) -> Option<usize>
where
    M: Model,
    M::State: Clone + Hash + Eq,
{
    let prop = model
        .properties()
        .into_iter()
        .find(|p| Property::of(p) == Some(property))?;
    for limit in 0..=max_depth {
        let mut seen: HashMap<M::State, usize> = HashMap::new();
        for s in model.init_states() {
            if dls(model, &prop, s, limit, &mut seen) {
                return Some(limit);
            }
        }
    }
    None
}

fn dls<M>(
    model: &M,
    prop: &stateright::Property<M>,
    state: M::State,
    budget: usize,
    seen: &mut HashMap<M::State, usize>,
) -> bool
where
    M: Model,
    M::State: Clone + Hash + Eq,
{
    if budget == 0 {
        return !(prop.condition)(model, &state);
    }
    if seen.get(&state).is_some_and(|b| *b >= budget) {
        return false;
    }
    seen.insert(state.clone(), budget);
    if !model.within_boundary(&state) {
        return false;
    }
    let mut next = Vec::new();
    model.next_states_into(&state, &mut next);
    next.into_iter()
        .any(|s| dls(model, prop, s, budget - 1, seen))
}
