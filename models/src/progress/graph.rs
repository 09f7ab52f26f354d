//! A model's reachable graph, kept whole (states, steps and what each state's clients
//! are doing), and the promises judged on it.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;

use crate::check::Stop;
use crate::kernel::Stage;

use super::fair::{fair_lasso, Edge, Graph};
use super::{tell, Kept, Progress, Promise};

/// The reachable graph of a model.
pub(super) struct Built<S> {
    states: Vec<S>,
    /// Each state's clients' stages.
    stages: Vec<Vec<Stage>>,
    /// Each state where time stops with a deadline still ahead (see [`super`]).
    cut: Vec<bool>,
    /// Each state's [`Progress::deadline_ahead`], until `cut` is made of it.
    ahead: Vec<bool>,
    /// Each state's [`Progress::clock_at_bound`].
    at_bound: Vec<bool>,
    /// Edge labels are the action's place in `Model::actions` of its source state.
    graph: Graph,
}

/// Every state reachable from the model's initial states, breadth first; `Err` when
/// there are more than `max_states`.
pub(super) fn build<M>(model: &M, max_states: usize) -> Result<Built<M::State>, Stop>
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut ids: HashMap<M::State, u32> = HashMap::new();
    let mut built = Built {
        states: Vec::new(),
        stages: Vec::new(),
        cut: Vec::new(),
        ahead: Vec::new(),
        at_bound: Vec::new(),
        graph: Graph::default(),
    };
    let mut add = |s: M::State, built: &mut Built<M::State>| -> Result<u32, Stop> {
        if let Some(&id) = ids.get(&s) {
            return Ok(id);
        }
        let id = u32::try_from(built.states.len()).map_err(|_| Stop::States)?;
        if built.states.len() >= max_states {
            return Err(Stop::States);
        }
        built.stages.push(model.stages(&s));
        built.ahead.push(model.deadline_ahead(&s));
        built.at_bound.push(model.clock_at_bound(&s));
        built.graph.edges.push(Vec::new());
        ids.insert(s.clone(), id);
        built.states.push(s);
        Ok(id)
    };
    for s in model.init_states() {
        let id = add(s, &mut built)?;
        if !built.graph.init.contains(&id) {
            built.graph.init.push(id);
        }
    }
    let mut next = 0usize;
    let mut actions = Vec::new();
    while next < built.states.len() {
        let s = built.states[next].clone();
        actions.clear();
        model.actions(&s, &mut actions);
        for (i, a) in actions.iter().enumerate() {
            let Some(t) = model.next_state(&s, a.clone()) else {
                continue;
            };
            if !model.within_boundary(&t) {
                continue;
            }
            let to = add(t, &mut built)?;
            built.graph.edges[next].push(Edge {
                to,
                class: model.fairness(a),
                label: u32::try_from(i).unwrap_or(u32::MAX),
            });
        }
        next += 1;
    }
    built.cut = (0..built.states.len())
        .map(|n| built.ahead[n] && (built.at_bound[n] || built.graph.edges[n].is_empty()))
        .collect();
    Ok(built)
}

fn holding(s: Stage) -> bool {
    matches!(s, Stage::Holding | Stage::Inside(_))
}

impl<S: Clone + Hash + Eq + Debug> Built<S> {
    fn clients(&self) -> usize {
        self.stages.first().map_or(0, Vec::len)
    }

    fn waits(&self, n: u32, c: usize) -> bool {
        self.stages[n as usize].get(c) == Some(&Stage::Queued)
    }

    /// Whether the step from `a` to `b` grants the lock to someone.
    fn grants(&self, a: u32, b: u32) -> bool {
        let (x, y) = (&self.stages[a as usize], &self.stages[b as usize]);
        x.iter().zip(y).any(|(p, q)| !holding(*p) && holding(*q))
    }

    /// Whether a client crashes on the step from `a` to `b`.
    fn crashes(&self, a: u32, b: u32) -> bool {
        let (x, y) = (&self.stages[a as usize], &self.stages[b as usize]);
        x.iter()
            .zip(y)
            .any(|(p, q)| *p != Stage::Crashed && *q == Stage::Crashed)
    }

    /// The graph paired with a bit "a client crashed and nobody was granted since":
    /// node `2n + bit`.
    fn after_crash(&self) -> Graph {
        let mut edges = Vec::with_capacity(self.graph.edges.len() * 2);
        for (n, out) in self.graph.edges.iter().enumerate() {
            for bit in 0..2u32 {
                edges.push(
                    out.iter()
                        .map(|e| {
                            let next = if self.grants(n as u32, e.to) {
                                0
                            } else if self.crashes(n as u32, e.to) {
                                1
                            } else {
                                bit
                            };
                            Edge {
                                to: 2 * e.to + next,
                                ..*e
                            }
                        })
                        .collect(),
                );
            }
        }
        Graph {
            edges,
            init: self.graph.init.iter().map(|&i| 2 * i).collect(),
        }
    }

    /// Whether `promise` is kept, and if not, the lasso that breaks it.
    pub(super) fn judge<M>(&self, model: &M, promise: Promise) -> Kept
    where
        M: Progress<State = S>,
        M::Action: Clone + Debug,
    {
        // Per client: the lasso proven without the bound on time, or found only with it.
        let (graph, node): (Graph, fn(u32) -> u32) = match promise {
            Promise::StarvationFree => (self.graph.clone(), |n| n),
            Promise::EventuallyFree => (self.after_crash(), |n| n / 2),
        };
        let stuck = |n: u32| promise == Promise::StarvationFree || n % 2 == 1;
        let mut proven = None;
        let mut cut = None;
        for c in 0..self.clients() {
            let found = fair_lasso(&graph, &|n| {
                stuck(n) && self.waits(node(n), c) && !self.cut[node(n) as usize]
            });
            if let Some(l) = found {
                let len = l.stem.len() + l.cycle.len();
                if proven.as_ref().is_none_or(|(k, _, _)| len < *k) {
                    proven = Some((len, c, l));
                }
            } else if cut.is_none()
                && fair_lasso(&graph, &|n| stuck(n) && self.waits(node(n), c)).is_some()
            {
                cut = Some(c);
            }
        }
        if let Some((_, c, l)) = proven {
            let path = tell::Path {
                start: node(l.start),
                stem: l.stem.iter().map(|e| (node(e.to), e.label)).collect(),
                cycle: l.cycle.iter().map(|e| (node(e.to), e.label)).collect(),
            };
            return Kept::Violated {
                lasso: Box::new(tell::tell(model, &self.states, promise, c, &path)),
            };
        }
        match cut {
            Some(c) => Kept::Unknown {
                why: format!(
                    "c{c} may wait for ever, but only where the model's clock stops with a \
                     deadline still ahead: at its bound (raise the horizon to decide), or in a \
                     dead end where a holder that cannot act holds up time (a timelock of the \
                     model)"
                ),
            },
            None => Kept::Holds,
        }
    }
}
