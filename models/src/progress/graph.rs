//! A model's reachable graph (states as fingerprints, steps, and what each state's
//! clients are doing), and the promises judged on it.
//!
//! The graph stores no state: each is a 128-bit fingerprint of its encoding in the
//! safety search's table ([`Visited`]), and only the states still to expand are kept
//! whole. A story is replayed from concrete states, each step found by the
//! fingerprint of its target. As in the safety search, two distinct states sharing a
//! fingerprint (about 10⁻¹³ among 10⁸ states) could merge; nothing else is lost.

use std::fmt::Debug;
use std::hash::Hash;

use crate::check::{encode, fingerprint, Visited};
use crate::kernel::Stage;

use super::fair::{fair_lasso, shortest_path, Edge, Graph};
use super::{tell, Kept, Progress, Promise};

/// A step that grants the lock out of request order.
#[derive(Clone, Copy)]
pub(super) struct Passing {
    /// Its source.
    pub(super) from: u32,
    /// The step.
    pub(super) edge: Edge,
    /// Who got the lock.
    pub(super) granted: usize,
    /// Who was passed over: a client whose request came first and still waits.
    pub(super) passed: usize,
}

/// The reachable graph of a model.
pub(super) struct Built {
    /// Each state's fingerprint, its index its node.
    pub(super) index: Visited,
    /// Bit `c` of a state's word: client `c` waits for the lock (queued).
    pub(super) waits: Vec<u64>,
    /// Bit `c`: client `c` asks for the lock without holding it — queued, or on its way
    /// (connecting, creating its node, reading its clock), as a retry loop passes
    /// through between its tries.
    pub(super) asks: Vec<u64>,
    /// Bit `c`: client `c` holds it.
    pub(super) holds: Vec<u64>,
    /// Each state where time stops with a deadline still ahead (see [`super`]).
    pub(super) cut: Vec<bool>,
    /// The steps, by source.
    pub(super) graph: Graph,
    /// How many clients the states have (at most 64 are judged).
    pub(super) clients: usize,
    /// Every step that grants out of request order (only for an ordered model).
    pub(super) passing: Vec<Passing>,
}

/// Whether a client at stage `s` asks for the lock without holding it: queued, or on
/// its way to asking; where finished clients start over (`repeats`), also finished —
/// one that gave up after its tries asks again.
pub(super) fn asking(s: Stage, repeats: bool) -> bool {
    matches!(s, Stage::Queued | Stage::Running) || (repeats && s == Stage::Done)
}

/// The clients (by bit) whose stage `pick` accepts.
pub(super) fn bits(stages: &[Stage], pick: impl Fn(Stage) -> bool) -> u64 {
    stages
        .iter()
        .take(64)
        .enumerate()
        .filter(|(_, s)| pick(**s))
        .fold(0, |m, (c, _)| m | (1 << c))
}

/// The fingerprint of `s`'s encoding, encoded into `buf`.
pub(super) fn print<S: Hash>(s: &S, buf: &mut Vec<u8>) -> [u64; 2] {
    buf.clear();
    encode(s, buf);
    fingerprint(buf)
}

impl Built {
    /// The node of the state the graph stores for `s` (reduced here), if reached.
    fn node_of<M: Progress>(&self, model: &M, s: &M::State) -> Option<u32>
    where
        M::State: Clone + Hash + Eq + Debug,
        M::Action: Clone + Debug,
    {
        let mut buf = Vec::new();
        self.index
            .index_of(print(&model.reduce(s.clone()), &mut buf))
    }

    /// How many states the graph has.
    pub(super) fn states(&self) -> usize {
        self.index.len()
    }

    /// How many steps.
    pub(super) fn edges(&self) -> usize {
        self.graph.edge_count()
    }

    /// Whether client `c` is, at node `n`, what `promise` says it must not stay for
    /// ever: waiting after a fault (eventually-free), or asking without being granted
    /// (starvation-free).
    fn stays(&self, promise: Promise, n: u32, c: usize) -> bool {
        self.stayers(promise, n) & (1 << c) != 0
    }

    /// Every client [`Built::stays`] counts at node `n`, by bit.
    fn stayers(&self, promise: Promise, n: u32) -> u64 {
        match promise {
            Promise::StarvationFree => self.asks[n as usize],
            _ => self.waits[n as usize],
        }
    }

    /// Whether the step from `a` to `b` grants the lock to someone.
    fn grants(&self, a: u32, b: u32) -> bool {
        self.holds[b as usize] & !self.holds[a as usize] != 0
    }

    /// The graph paired with a bit "a fault struck and nobody was granted since": node
    /// `2n + bit`.
    fn after_crash(&self) -> Graph {
        let mut g = Graph::with_capacity(2 * self.graph.len(), 2 * self.graph.edge_count());
        for n in 0..self.graph.len() as u32 {
            for bit in 0..2u32 {
                g.push_node(self.graph.out(n).iter().map(|e| {
                    let next = if self.grants(n, e.to) {
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
                }));
            }
        }
        g.init = self.graph.init.iter().map(|&i| 2 * i).collect();
        g
    }

    /// FIFO: the first grant, on a shortest path, that passes over a client whose request
    /// came first and still waits; kept when no reachable step does.
    fn fifo<M>(&self, model: &M) -> Kept
    where
        M: Progress,
        M::State: Clone + Hash + Eq + Debug,
        M::Action: Clone + Debug,
    {
        let mut sources = vec![false; self.graph.len()];
        for p in &self.passing {
            sources[p.from as usize] = true;
        }
        let Some((start, mut stem)) = shortest_path(
            &self.graph,
            &self.graph.init,
            &|n| sources[n as usize],
            &|_| true,
        ) else {
            return Kept::Holds;
        };
        let at = stem.last().map_or(start, |e| e.to);
        let Some(p) = self.passing.iter().find(|p| p.from == at) else {
            return Kept::Holds;
        };
        stem.push(p.edge);
        let path = tell::Path {
            start,
            stem: stem.iter().map(|e| (e.to, e.class)).collect(),
            cycle: Vec::new(),
        };
        let mut lasso = tell::tell(
            model,
            &|s| self.node_of(model, s),
            Promise::Fifo,
            p.passed,
            &path,
        );
        lasso.closing = format!(
            "c{} is granted the lock at step {} while c{}, whose request reached the lock \
             service first, still waits: grants do not follow request order.",
            p.granted,
            stem.len(),
            p.passed
        );
        Kept::Violated {
            lasso: Box::new(lasso),
        }
    }

    /// Whether `promise` is kept, and if not, the lasso that breaks it.
    pub(super) fn judge<M>(&self, model: &M, promise: Promise) -> Kept
    where
        M: Progress,
        M::State: Clone + Hash + Eq + Debug,
        M::Action: Clone + Debug,
    {
        let product;
        let (graph, node): (&Graph, fn(u32) -> u32) = match promise {
            Promise::StarvationFree => (&self.graph, |n| n),
            Promise::EventuallyFree => {
                product = self.after_crash();
                (&product, |n| n / 2)
            }
            Promise::Fifo => return self.fifo(model),
        };
        let stuck = |n: u32| promise == Promise::StarvationFree || n % 2 == 1;
        // Per client: the lasso proven without the bound on time, or found only with
        // it. A fair component among the states kept from the cut lies inside one among
        // all the states, so where the wider search finds none, the narrower is spared.
        let mut proven = None;
        let mut cut = None;
        // The same holds for all clients at once: where nobody can wait for ever, the
        // search per client is spared (the common case, a promise kept).
        let anyone = |n: u32| stuck(n) && self.stayers(promise, node(n)) != 0;
        let clients = if fair_lasso(graph, &anyone).is_some() {
            self.clients
        } else {
            0
        };
        for c in 0..clients {
            if fair_lasso(graph, &|n| stuck(n) && self.stays(promise, node(n), c)).is_none() {
                continue;
            }
            let found = fair_lasso(graph, &|n| {
                stuck(n) && self.stays(promise, node(n), c) && !self.cut[node(n) as usize]
            });
            match found {
                Some(l) => {
                    let len = l.stem.len() + l.cycle.len();
                    if proven.as_ref().is_none_or(|(k, _, _)| len < *k) {
                        proven = Some((len, c, l));
                    }
                }
                None => {
                    cut.get_or_insert(c);
                }
            }
        }
        if let Some((_, c, l)) = proven {
            let path = tell::Path {
                start: node(l.start),
                stem: l.stem.iter().map(|e| (node(e.to), e.class)).collect(),
                cycle: l.cycle.iter().map(|e| (node(e.to), e.class)).collect(),
            };
            return Kept::Violated {
                lasso: Box::new(tell::tell(
                    model,
                    &|s| self.node_of(model, s),
                    promise,
                    c,
                    &path,
                )),
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
