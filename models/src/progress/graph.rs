//! A model's reachable graph, kept whole (states, steps and what each state's clients
//! are doing), and the promises judged on it.

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use indexmap::IndexSet;

use crate::check::{resident_bytes, Limits, Stop};
use crate::kernel::Stage;

use super::fair::{fair_lasso, shortest_path, Edge, Graph};
use super::{tell, Kept, Progress, Promise};

/// The reachable graph of a model.
pub(super) struct Built<S> {
    /// Each state once, its index its node.
    states: IndexSet<S>,
    /// Bit `c` of a state's word: client `c` waits for the lock (queued).
    waits: Vec<u64>,
    /// Bit `c`: client `c` holds it.
    holds: Vec<u64>,
    /// Each state where time stops with a deadline still ahead (see [`super`]).
    cut: Vec<bool>,
    /// Each state's [`Progress::deadline_ahead`] and [`Progress::clock_at_bound`],
    /// until `cut` is made of them.
    ahead: Vec<(bool, bool)>,
    /// Edge labels are the action's place in `Model::actions` of its source state
    /// (for a reader of the graph; stories find their actions by target and class).
    graph: Graph,
    /// How many clients the states have (at most 64 are judged).
    clients: usize,
}

fn holding(s: Stage) -> bool {
    matches!(s, Stage::Holding | Stage::Inside(_))
}

/// The clients (by bit) whose stage `pick` accepts.
fn bits(stages: &[Stage], pick: impl Fn(Stage) -> bool) -> u64 {
    stages
        .iter()
        .take(64)
        .enumerate()
        .filter(|(_, s)| pick(**s))
        .fold(0, |m, (c, _)| m | (1 << c))
}

impl<S: Clone + Hash + Eq + Debug> Built<S> {
    /// Adds `s` unless it is known; its node either way.
    fn add<M: Progress<State = S>>(&mut self, model: &M, s: S, limits: &Limits) -> Result<u32, Stop>
    where
        M::Action: Clone + Debug,
    {
        if let Some(id) = self.states.get_index_of(&s) {
            return u32::try_from(id).map_err(|_| Stop::States);
        }
        if self.states.len() >= limits.max_states {
            return Err(Stop::States);
        }
        let id = u32::try_from(self.states.len()).map_err(|_| Stop::States)?;
        let stages = model.stages(&s);
        self.clients = self.clients.max(stages.len().min(64));
        self.waits.push(bits(&stages, |s| s == Stage::Queued));
        self.holds.push(bits(&stages, holding));
        self.ahead
            .push((model.deadline_ahead(&s), model.clock_at_bound(&s)));
        self.graph.edges.push(Vec::new());
        self.states.insert(s);
        Ok(id)
    }

    /// How many states the graph has.
    pub(super) fn states(&self) -> usize {
        self.states.len()
    }

    /// How many steps.
    pub(super) fn edges(&self) -> usize {
        self.graph.edges.iter().map(Vec::len).sum()
    }

    fn waits(&self, n: u32, c: usize) -> bool {
        self.waits[n as usize] & (1 << c) != 0
    }

    /// Whether the step from `a` to `b` grants the lock to someone.
    fn grants(&self, a: u32, b: u32) -> bool {
        self.holds[b as usize] & !self.holds[a as usize] != 0
    }

    /// The graph paired with a bit "a fault struck and nobody was granted since": node
    /// `2n + bit`.
    fn after_crash(&self) -> Graph {
        let mut edges = Vec::with_capacity(self.graph.edges.len() * 2);
        for (n, out) in self.graph.edges.iter().enumerate() {
            for bit in 0..2u32 {
                edges.push(
                    out.iter()
                        .map(|e| {
                            let next = if self.grants(n as u32, e.to) {
                                0
                            } else if e.class.is_none() {
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

    /// FIFO: the first grant, on a shortest path, that passes over a client whose request
    /// came first and still waits; kept when no reachable step does.
    fn fifo<M>(&self, model: &M) -> Kept
    where
        M: Progress<State = S>,
        M::Action: Clone + Debug,
    {
        // Each step that grants out of order: (its source, the edge, who got the lock,
        // who was passed over).
        let mut passing: Vec<(u32, Edge, usize, usize)> = Vec::new();
        for (a, out) in self.graph.edges.iter().enumerate() {
            let Some(state) = self.states.get_index(a) else {
                continue;
            };
            for e in out {
                let granted = self.holds[e.to as usize] & !self.holds[a];
                for c in (0..self.clients).filter(|c| granted & (1 << c) != 0) {
                    let Some(mine) = model.arrival(state, c) else {
                        continue;
                    };
                    let first = (0..self.clients).find(|&d| {
                        d != c
                            && self.waits(a as u32, d)
                            && model.arrival(state, d).is_some_and(|theirs| theirs < mine)
                    });
                    if let Some(d) = first {
                        passing.push((a as u32, *e, c, d));
                    }
                }
            }
        }
        let sources: Vec<u32> = passing.iter().map(|p| p.0).collect();
        let Some((start, mut stem)) = shortest_path(
            &self.graph,
            &self.graph.init,
            &|n| sources.contains(&n),
            &|_| true,
        ) else {
            return Kept::Holds;
        };
        let at = stem.last().map_or(start, |e| e.to);
        let Some(&(_, edge, c, d)) = passing.iter().find(|p| p.0 == at) else {
            return Kept::Holds;
        };
        stem.push(edge);
        let path = tell::Path {
            start,
            stem: stem.iter().map(|e| (e.to, e.class)).collect(),
            cycle: Vec::new(),
        };
        let mut lasso = tell::tell(model, &self.states, Promise::Fifo, d, &path);
        lasso.closing = format!(
            "c{c} is granted the lock at step {} while c{d}, whose request reached the lock \
             service first, still waits: grants do not follow request order.",
            stem.len()
        );
        Kept::Violated {
            lasso: Box::new(lasso),
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
            Promise::Fifo => return self.fifo(model),
        };
        let stuck = |n: u32| promise == Promise::StarvationFree || n % 2 == 1;
        let mut proven = None;
        let mut cut = None;
        for c in 0..self.clients {
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
                stem: l.stem.iter().map(|e| (node(e.to), e.class)).collect(),
                cycle: l.cycle.iter().map(|e| (node(e.to), e.class)).collect(),
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

/// Every state reachable from the model's initial states, breadth first; `Err` with
/// the limit that stopped it first.
pub(super) fn build<M>(model: &M, limits: &Limits) -> Result<Built<M::State>, Stop>
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut built = Built {
        states: IndexSet::new(),
        waits: Vec::new(),
        holds: Vec::new(),
        cut: Vec::new(),
        ahead: Vec::new(),
        graph: Graph::default(),
        clients: 0,
    };
    for s in model.init_states() {
        let id = built.add(model, model.reduce(s), limits)?;
        if !built.graph.init.contains(&id) {
            built.graph.init.push(id);
        }
    }
    let started = Instant::now();
    let base = resident_bytes().unwrap_or(0);
    let mut actions = Vec::new();
    let mut next = 0usize;
    while let Some(s) = built.states.get_index(next).cloned() {
        // Read every few thousand states, as the safety search does.
        if next.is_multiple_of(4096) {
            if limits.timeout.is_some_and(|t| started.elapsed() >= t) {
                return Err(Stop::Time);
            }
            let grown = resident_bytes().map_or(0, |b| b.saturating_sub(base));
            if limits.max_bytes.is_some_and(|m| grown >= m) {
                return Err(Stop::Memory);
            }
        }
        actions.clear();
        model.actions(&s, &mut actions);
        for (i, a) in actions.iter().enumerate() {
            let Some(t) = model.next_state(&s, a.clone()) else {
                continue;
            };
            if !model.within_boundary(&t) {
                continue;
            }
            let to = built.add(model, model.reduce(t), limits)?;
            built.graph.edges[next].push(Edge {
                to,
                class: model.fairness(a),
                label: u32::try_from(i).unwrap_or(u32::MAX),
            });
        }
        next += 1;
    }
    built.cut = (0..built.states.len())
        .map(|n| {
            let (ahead, at_bound) = built.ahead[n];
            ahead && (at_bound || built.graph.edges[n].is_empty())
        })
        .collect();
    Ok(built)
}
