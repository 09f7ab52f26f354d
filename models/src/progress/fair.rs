//! Fair cycles in an explicit graph: the search under every progress verdict, kept
//! apart from any model so a test can hold it against a brute-force oracle.
//!
//! A progress property fails when some behaviour stays for ever among the states it
//! calls bad (a client waiting, the lock stuck) *and* is fair: under weak fairness, a
//! step class that is enabled in every state of the cycle must be taken in it, or a
//! real system would take it sooner or later (a clock tick, a server applying a write,
//! a retrying client's retry). Faults belong to no class: a crash may never come.
//!
//! With weak fairness alone, a strongly connected component of the bad states holds a
//! fair cycle exactly when, for every class, it has an edge of that class inside or a
//! state where the class is disabled: one cycle through every state and edge of the
//! component is then fair, and if a class is enabled everywhere in it and taken
//! nowhere, no cycle inside it is. So the search is Tarjan's components on the bad
//! states, that test on each, and a lasso built through the component with the
//! nearest entry.

use std::collections::VecDeque;

/// A step class that weak fairness covers (a client's own steps, the clock, a server).
pub type Class = u16;

/// One edge: where it goes and its fairness class (`None`: a fault, never owed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The target node.
    pub to: u32,
    /// Its class under weak fairness.
    pub class: Option<Class>,
}

/// A graph: each node's outgoing edges, and where behaviours start. The edges sit in
/// one array, node after node (compressed rows): a million-state graph is two
/// allocations, not a million.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Where node `n`'s edges start in `edges`; one entry more than there are nodes.
    starts: Vec<u32>,
    /// Every node's outgoing edges, node after node.
    edges: Vec<Edge>,
    /// The initial nodes.
    pub init: Vec<u32>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph {
            starts: vec![0],
            edges: Vec::new(),
            init: Vec::new(),
        }
    }
}

impl Graph {
    /// The graph with node `n`'s edges `lists[n]`.
    pub fn new(lists: Vec<Vec<Edge>>, init: Vec<u32>) -> Graph {
        let mut g = Graph {
            init,
            ..Graph::default()
        };
        for out in lists {
            g.push_node(out);
        }
        g
    }

    /// An empty graph with room for `nodes` nodes and `edges` edges.
    pub fn with_capacity(nodes: usize, edges: usize) -> Graph {
        let mut starts = Vec::with_capacity(nodes + 1);
        starts.push(0);
        Graph {
            starts,
            edges: Vec::with_capacity(edges),
            init: Vec::new(),
        }
    }

    /// Adds the next node, with its edges (nodes are numbered in the order pushed).
    pub fn push_node(&mut self, out: impl IntoIterator<Item = Edge>) {
        self.edges.extend(out);
        self.starts.push(self.edges.len() as u32);
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether it has no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many edges.
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Node `n`'s outgoing edges.
    pub fn out(&self, n: u32) -> &[Edge] {
        let n = n as usize;
        &self.edges[self.starts[n] as usize..self.starts[n + 1] as usize]
    }
}

/// A fair behaviour that stays among the bad states for ever: a stem from an initial
/// node to the cycle's first node, then the cycle. An empty cycle is a node with no
/// step at all: the behaviour stutters there for ever (nothing is owed, nothing can
/// happen).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lasso {
    /// The first node.
    pub start: u32,
    /// Edges from `start` to the cycle's first node.
    pub stem: Vec<Edge>,
    /// Edges from the cycle's first node back to it.
    pub cycle: Vec<Edge>,
}

impl Lasso {
    /// The node the cycle starts and ends at.
    pub fn knot(&self) -> u32 {
        self.stem.last().map_or(self.start, |e| e.to)
    }
}

/// The shortest-stem fair lasso whose cycle stays in `bad` nodes, if there is one.
/// The stem may pass anywhere; the cycle is fair in the whole graph's terms (a class
/// counts as enabled in a node when any of its edges there has it, also edges that
/// leave the bad states).
pub fn fair_lasso(g: &Graph, bad: &dyn Fn(u32) -> bool) -> Option<Lasso> {
    let comps = components(g, bad);
    let fair = fair_components(g, &comps);
    // Without a fair component there is nothing to reach: spare the walk over the graph.
    if fair.iter().all(Option::is_none) {
        return None;
    }
    let (start, stem) = shortest_path(g, &g.init, &|n| fair[n as usize].is_some(), &|_| true)?;
    let knot = stem.last().map_or(start, |e| e.to);
    let comp = fair[knot as usize].as_ref()?;
    Some(Lasso {
        start,
        stem,
        cycle: cycle_through(g, knot, comp, &comps),
    })
}

/// A fair component, as its cycle is built.
#[derive(Clone, Debug)]
struct Component {
    /// Whether it is one node with no step at all.
    stutter: bool,
}

/// For every node, its bad component's duty if that component is fair.
fn fair_components(g: &Graph, comps: &[Option<u32>]) -> Vec<Option<Component>> {
    let mut members: Vec<Vec<u32>> = Vec::new();
    for (n, c) in comps.iter().enumerate() {
        if let Some(c) = *c {
            let c = c as usize;
            if members.len() <= c {
                members.resize(c + 1, Vec::new());
            }
            members[c].push(n as u32);
        }
    }
    let mut out = vec![None; g.len()];
    for (id, nodes) in members.iter().enumerate() {
        let id = id as u32;
        let inside = |e: &Edge| comps[e.to as usize] == Some(id);
        let stutter = nodes.len() == 1 && g.out(nodes[0]).is_empty();
        let cyclic = nodes.iter().any(|&n| g.out(n).iter().any(inside));
        if !stutter && !cyclic {
            continue;
        }
        let mut owed: Vec<Class> = enabled(g, nodes[0]);
        for &n in &nodes[1..] {
            let here = enabled(g, n);
            owed.retain(|c| here.contains(c));
        }
        let taken = |c: Class| {
            nodes
                .iter()
                .any(|&n| g.out(n).iter().any(|e| inside(e) && e.class == Some(c)))
        };
        if owed.iter().all(|&c| taken(c)) {
            for &n in nodes {
                out[n as usize] = Some(Component { stutter });
            }
        }
    }
    out
}

/// The classes with an edge out of `n`, sorted, once each.
fn enabled(g: &Graph, n: u32) -> Vec<Class> {
    let mut c: Vec<Class> = g.out(n).iter().filter_map(|e| e.class).collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// Tarjan's strongly connected components of the subgraph of `bad` nodes, iteratively
/// (a deep graph must not overflow the stack): each bad node's component id.
fn components(g: &Graph, bad: &dyn Fn(u32) -> bool) -> Vec<Option<u32>> {
    const NONE: u32 = u32::MAX;
    let n = g.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut comp = vec![None; n];
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    for root in 0..n as u32 {
        if index[root as usize] != NONE || !bad(root) {
            continue;
        }
        // (node, next edge to look at)
        let mut work: Vec<(u32, usize)> = vec![(root, 0)];
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            let edges = g.out(v);
            if *i < edges.len() {
                let w = edges[*i].to;
                *i += 1;
                if !bad(w) {
                    continue;
                }
                if index[w as usize] == NONE {
                    index[w as usize] = next_index;
                    low[w as usize] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    work.push((w, 0));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent as usize] = low[parent as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = Some(next_comp);
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

/// A shortest path (breadth-first) from any of `from` to a node `goal` accepts, over
/// edges `usable` accepts: its first node and its edges.
pub(super) fn shortest_path(
    g: &Graph,
    from: &[u32],
    goal: &dyn Fn(u32) -> bool,
    usable: &dyn Fn(&Edge) -> bool,
) -> Option<(u32, Vec<Edge>)> {
    let mut parent: Vec<Option<(u32, Edge)>> = vec![None; g.len()];
    let mut seen = vec![false; g.len()];
    let mut queue = VecDeque::new();
    for &s in from {
        if !seen[s as usize] {
            seen[s as usize] = true;
            queue.push_back(s);
        }
    }
    while let Some(n) = queue.pop_front() {
        if goal(n) {
            let mut path = Vec::new();
            let mut at = n;
            while let Some((p, e)) = parent[at as usize] {
                path.push(e);
                at = p;
            }
            path.reverse();
            return Some((at, path));
        }
        for e in g.out(n) {
            if usable(e) && !seen[e.to as usize] {
                seen[e.to as usize] = true;
                parent[e.to as usize] = Some((n, *e));
                queue.push_back(e.to);
            }
        }
    }
    None
}

/// A cycle from `knot` back to it inside its component that is fair on the states it
/// passes: while some class is enabled on every one of them and taken on none, the
/// cycle goes on to the nearest state where that class is disabled or takes its edge
/// (the component being fair, one of the two is inside it). Passing more states only
/// ends duties, so what is met stays met, and the walk home adds none.
fn cycle_through(g: &Graph, knot: u32, comp: &Component, comps: &[Option<u32>]) -> Vec<Edge> {
    if comp.stutter {
        return Vec::new();
    }
    let id = comps[knot as usize];
    let inside = |e: &Edge| comps[e.to as usize] == id;
    let class_edge = |n: u32, c: Class| {
        g.out(n)
            .iter()
            .find(|e| inside(e) && e.class == Some(c))
            .copied()
    };
    let mut cycle: Vec<Edge> = Vec::new();
    let mut at = knot;
    loop {
        let passed = || std::iter::once(knot).chain(cycle.iter().map(|e| e.to));
        let mut owed = enabled(g, knot);
        for n in passed() {
            let here = enabled(g, n);
            owed.retain(|c| here.contains(c));
        }
        let Some(&c) = owed
            .iter()
            .find(|&&c| !cycle.iter().any(|e| e.class == Some(c)))
        else {
            break;
        };
        let goal = |n: u32| !enabled(g, n).contains(&c) || class_edge(n, c).is_some();
        let Some((_, path)) = shortest_path(g, &[at], &goal, &inside) else {
            break;
        };
        at = path.last().map_or(at, |e| e.to);
        cycle.extend(path);
        if enabled(g, at).contains(&c) {
            if let Some(e) = class_edge(at, c) {
                cycle.push(e);
                at = e.to;
            }
        }
    }
    if cycle.is_empty() {
        // Nothing owed at the knot itself: the shortest way round, a step and home.
        let mut best: Option<Vec<Edge>> = None;
        for e in g.out(knot).iter().filter(|e| inside(e)) {
            let back = if e.to == knot {
                Some(Vec::new())
            } else {
                shortest_path(g, &[e.to], &|n| n == knot, &inside).map(|(_, p)| p)
            };
            if let Some(back) = back {
                if best.as_ref().is_none_or(|b| back.len() + 1 < b.len()) {
                    best = Some(std::iter::once(*e).chain(back).collect());
                }
            }
        }
        return best.unwrap_or_default();
    }
    if at != knot {
        if let Some((_, home)) = shortest_path(g, &[at], &|n| n == knot, &inside) {
            cycle.extend(home);
        }
    }
    cycle
}

#[cfg(test)]
mod tests;
