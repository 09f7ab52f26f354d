//! The fair-cycle search held against a brute-force oracle on random small graphs:
//! every subset of the bad nodes that is strongly connected (or one node with no step)
//! is tried for fairness, which needs no component algorithm at all.

use proptest::prelude::*;

use super::*;

/// Whether `set` (a bitmask of nodes) is strongly connected using only edges inside it.
fn strongly_connected(g: &Graph, set: u32) -> bool {
    let nodes: Vec<u32> = (0..g.len() as u32)
        .filter(|n| set & (1 << n) != 0)
        .collect();
    let Some(&first) = nodes.first() else {
        return false;
    };
    let reach = |from: u32, forward: bool| {
        let mut seen = 1u32 << from;
        let mut changed = true;
        while changed {
            changed = false;
            for a in 0..g.len() {
                for e in g.out(a as u32) {
                    let (x, y) = if forward {
                        (a as u32, e.to)
                    } else {
                        (e.to, a as u32)
                    };
                    let inside = set & (1 << x) != 0 && set & (1 << y) != 0;
                    if inside && seen & (1 << x) != 0 && seen & (1 << y) == 0 {
                        seen |= 1 << y;
                        changed = true;
                    }
                }
            }
        }
        seen
    };
    reach(first, true) & set == set && reach(first, false) & set == set
}

/// Nodes reachable from the initial nodes.
fn reachable(g: &Graph) -> u32 {
    let mut seen = 0u32;
    let mut todo: Vec<u32> = g.init.clone();
    while let Some(n) = todo.pop() {
        if seen & (1 << n) != 0 {
            continue;
        }
        seen |= 1 << n;
        todo.extend(g.out(n).iter().map(|e| e.to));
    }
    seen
}

/// Whether some reachable set of bad nodes holds a fair cycle (or a dead end).
fn oracle(g: &Graph, bad: u32) -> bool {
    fair_nodes(g, bad) != 0
}

/// The fewest steps from an initial node to a node on some fair cycle (or dead end)
/// of bad nodes: the shortest stem a lasso can have.
fn shortest_stem(g: &Graph, bad: u32) -> Option<usize> {
    let goal = fair_nodes(g, bad);
    let mut level: u32 = g.init.iter().fold(0, |m, n| m | (1 << n));
    let mut seen = level;
    for depth in 0..=g.len() {
        if level & goal != 0 {
            return Some(depth);
        }
        let mut next = 0u32;
        for a in (0..g.len() as u32).filter(|a| level & (1 << a) != 0) {
            for e in g.out(a) {
                next |= 1 << e.to;
            }
        }
        level = next & !seen;
        seen |= next;
    }
    None
}

/// Every node that lies in a reachable set of bad nodes holding a fair cycle (or that
/// is a dead end among them), as a bitmask.
fn fair_nodes(g: &Graph, bad: u32) -> u32 {
    let n = g.len();
    let live = reachable(g);
    (1u32..(1 << n))
        .filter(|&set| {
            if set & !(bad & live) != 0 || !strongly_connected(g, set) {
                return false;
            }
            let nodes: Vec<usize> = (0..n).filter(|i| set & (1 << i) != 0).collect();
            let inside = |e: &Edge| set & (1 << e.to) != 0;
            let dead_end = nodes.len() == 1 && g.out(nodes[0] as u32).is_empty();
            let cyclic = nodes.iter().any(|&a| g.out(a as u32).iter().any(inside));
            if !dead_end && !cyclic {
                return false;
            }
            (0..4).all(|c| {
                let everywhere = nodes
                    .iter()
                    .all(|&a| g.out(a as u32).iter().any(|e| e.class == Some(c)));
                let taken = nodes.iter().any(|&a| {
                    g.out(a as u32)
                        .iter()
                        .any(|e| inside(e) && e.class == Some(c))
                });
                !everywhere || taken
            })
        })
        .fold(0, |m, set| m | set)
}

/// Whether `l` is a real fair lasso of `g` staying in `bad` (bitmask) on its cycle.
fn valid(g: &Graph, bad: u32, l: &Lasso) -> Result<(), String> {
    if !g.init.contains(&l.start) {
        return Err("starts off the initial nodes".into());
    }
    let mut at = l.start;
    for e in l.stem.iter().chain(&l.cycle) {
        if !g.out(at).contains(e) {
            return Err(format!("no edge {e:?} from {at}"));
        }
        at = e.to;
    }
    let knot = l.knot();
    if at != knot {
        return Err(format!("the cycle ends at {at}, not {knot}"));
    }
    let mut on_cycle = vec![knot];
    on_cycle.extend(l.cycle.iter().map(|e| e.to));
    if on_cycle.iter().any(|&n| bad & (1 << n) == 0) {
        return Err("the cycle leaves the bad nodes".into());
    }
    if l.cycle.is_empty() && !g.out(knot).is_empty() {
        return Err("stutters where a step is possible".into());
    }
    for c in 0..4 {
        let everywhere = on_cycle
            .iter()
            .all(|&n| g.out(n).iter().any(|e| e.class == Some(c)));
        if everywhere && !l.cycle.iter().any(|e| e.class == Some(c)) {
            return Err(format!("class {c} is enabled all round and never taken"));
        }
    }
    Ok(())
}

fn graph() -> impl Strategy<Value = (Graph, u32)> {
    (1usize..=6).prop_flat_map(|n| {
        let edge = (0..n as u32, prop::option::weighted(0.8, 0u16..4));
        (
            prop::collection::vec(prop::collection::vec(edge, 0..4), n),
            prop::collection::vec(0..n as u32, 1..3),
            0u32..(1 << n),
        )
            .prop_map(|(edges, init, bad)| {
                let edges = edges
                    .into_iter()
                    .map(|es| {
                        es.into_iter()
                            .map(|(to, class)| Edge { to, class })
                            .collect()
                    })
                    .collect();
                (Graph::new(edges, init), bad)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_search_finds_a_fair_lasso_exactly_when_the_oracle_does_with_the_shortest_stem((g, bad) in graph()) {
        let found = fair_lasso(&g, &|n| bad & (1 << n) != 0);
        prop_assert_eq!(found.is_some(), oracle(&g, bad), "{:?} bad={:b} found {:?}", g, bad, found);
        if let Some(l) = found {
            prop_assert!(valid(&g, bad, &l).is_ok(), "{:?}: {:?} in {:?} bad={:b}", valid(&g, bad, &l), l, g, bad);
            // The story's stem is as short as any lasso's can be.
            prop_assert_eq!(Some(l.stem.len()), shortest_stem(&g, bad), "{:?} in {:?} bad={:b}", l, g, bad);
        }
    }
}

#[test]
fn a_class_enabled_all_round_and_never_taken_makes_the_cycle_unfair() {
    // 0 retries for ever (class 0); the clock (class 1) could tick to 1 every time.
    let g = Graph::new(
        vec![
            vec![
                Edge {
                    to: 0,
                    class: Some(0),
                },
                Edge {
                    to: 1,
                    class: Some(1),
                },
            ],
            vec![Edge {
                to: 1,
                class: Some(0),
            }],
        ],
        vec![0],
    );
    let only_zero = fair_lasso(&g, &|n| n == 0);
    assert_eq!(only_zero, None, "the tick is owed");
    let l = fair_lasso(&g, &|_| true).expect("1 retries for ever, nothing owed");
    assert_eq!(l.knot(), 1);
    assert_eq!(l.cycle.len(), 1);
}

#[test]
fn a_dead_end_is_a_lasso_that_stutters() {
    let g = Graph::new(vec![vec![Edge { to: 1, class: None }], vec![]], vec![0]);
    let l = fair_lasso(&g, &|n| n == 1).expect("stuck at 1");
    assert_eq!((l.stem.len(), l.cycle.len()), (1, 0));
}
