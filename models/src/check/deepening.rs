//! The second opinion on a counterexample's length: iterative deepening, a search
//! that shares nothing with the breadth-first one but the model.

use super::*;

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
    model.next_states_into(&state, &mut Vec::new(), &mut next);
    next.into_iter()
        .any(|s| dls(model, prop, s, budget - 1, seen))
}
