//! The Redlock model's canonical form: what the search stores of a state so that states
//! which cannot be told apart are stored once.
//!
//! Two reductions, both exact (a state and its canonical form have the same futures up
//! to names, and the same verdicts):
//! - values nothing reads any more are reset: the downtime of a node that may restart
//!   already, and the attempt start and successes of a client whose attempt can no
//!   longer succeed;
//! - clients are interchangeable (they run one program from one start), and so are
//!   nodes until a fault or a client tells them apart: clients are put in the order of
//!   a signature that names no client and renamed (bits and servers alike), then the
//!   nodes are sorted.

use std::cell::RefCell;

use smallvec::SmallVec;

use crate::check::{encode, Symmetry};

use super::model::{client_value, RedlockModel, RedlockState, RlPhase};

thread_local! {
    /// Where a candidate form is encoded before it is compared with the best so far.
    static SCRATCH: RefCell<Vec<u8>> = RefCell::default();
}

/// At most this many renamings are compared for one state; beyond, the rest of the
/// ties go untried (still exact: fewer states joined, none wrongly).
const MAX_CANDIDATES: usize = 24;

impl Symmetry for RedlockModel {
    fn canonical(&self, s: &RedlockState) -> RedlockState {
        self.canonical_state(s)
    }

    fn encode_canonical(&self, s: &RedlockState, out: &mut Vec<u8>) {
        self.encode_canonical_state(s, out);
    }
}

impl RedlockModel {
    /// The representative of `s`'s class.
    pub fn canonical_state(&self, s: &RedlockState) -> RedlockState {
        self.encode_canonical_state(s, &mut Vec::new())
    }

    /// Appends the encoding of [`RedlockModel::canonical_state`] to `out`, and returns
    /// that state. Clients go in the order of their signatures; where signatures tie,
    /// every order of the tied clients is tried and the least encoding wins, so two
    /// states that differ only by names get one form.
    pub fn encode_canonical_state(&self, s: &RedlockState, out: &mut Vec<u8>) -> RedlockState {
        let mut base = s.clone();
        self.forget_dead_values(&mut base);
        for n in &mut base.nodes {
            n.name = 0;
        }
        // A user's scripts may write a client's name where renaming would not find it
        // (a hash field, a longer string): its clients keep their names.
        let candidates = match self.protocol {
            Some(_) => SmallVec::from_elem([0, 1, 2, 3, 4, 5, 6, 7], 1),
            None => client_places(&base),
        };
        if let [to] = candidates[..] {
            rename_clients(&mut base, &to[..s.clients.len()]);
            sort_nodes(&mut base);
            encode(&base, out);
            return base;
        }
        let start = out.len();
        let mut best: Option<RedlockState> = None;
        for to in candidates {
            let mut c = base.clone();
            rename_clients(&mut c, &to[..s.clients.len()]);
            sort_nodes(&mut c);
            if best.is_none() {
                encode(&c, out);
                best = Some(c);
                continue;
            }
            let better = SCRATCH.with_borrow_mut(|scratch| {
                scratch.clear();
                encode(&c, scratch);
                let better = scratch[..] < out[start..];
                if better {
                    out.truncate(start);
                    out.extend_from_slice(scratch);
                }
                better
            });
            if better {
                best = Some(c);
            }
        }
        best.unwrap_or(base)
    }

    /// The nodes' half of the canonical form, for the progress graph: values nothing
    /// reads reset, names reset, nodes sorted; clients stay where they are (their
    /// steps' fairness classes are theirs).
    pub(super) fn nodes_sorted(&self, mut s: RedlockState) -> RedlockState {
        self.forget_dead_values(&mut s);
        for n in &mut s.nodes {
            n.name = 0;
        }
        sort_nodes(&mut s);
        s
    }

    /// Resets what no step reads again, to the value a state reaching the same point
    /// the latest would have.
    fn forget_dead_values(&self, s: &mut RedlockState) {
        let now = s.now;
        for n in &mut s.nodes {
            // Restart asks only whether the delay has passed, and time only grows.
            if n.down_since.is_some_and(|t| now >= t + self.restart_delay) {
                n.down_since = Some(now - self.restart_delay);
            }
        }
        for (c, cl) in s.clients.iter_mut().enumerate() {
            // Validity only shrinks during an attempt: once it is spent, the decision
            // will fail whatever the client got, and failing resets the attempt.
            let spent = cl.phase == RlPhase::Acquiring && now + self.drift >= cl.t0 + self.ttl;
            if spent {
                cl.t0 = (now + self.drift).saturating_sub(self.ttl);
                for n in &mut s.nodes {
                    n.got &= !(1 << c);
                }
            }
        }
    }
}

/// The candidate places of the clients: in each, `to[c]` is client `c`'s place.
/// Clients go in the order of a signature that names no client: the client's own
/// fields and, sorted, what each node holds of it. Symmetric states have the same
/// signatures, so ordering by them is a function of the class; where signatures tie,
/// every order of the tied clients is a candidate.
fn client_places(s: &RedlockState) -> SmallVec<[[u8; 8]; 6]> {
    // What each node is, told without names. Packed for speed and allowed to lose
    // detail: a lossy signature only makes more ties, and ties are all tried.
    let shapes: SmallVec<[u64; 8]> = s
        .nodes
        .iter()
        .map(|n| {
            n.server.due().map_or(0, |d| d + 1) << 32
                | n.offset << 16
                | n.down_since.map_or(0, |t| t + 1)
        })
        .collect();
    let signature = |c: usize| {
        let bit = 1u8 << c;
        let mut facts = [0u64; 8];
        for ((f, n), shape) in facts.iter_mut().zip(&s.nodes).zip(&shapes) {
            *f = u64::from(n.tried & bit != 0) << 63
                | u64::from(n.got & bit != 0) << 62
                | u64::from(n.server.creator == Some(c as u8)) << 61
                | u64::from(n.cut & bit != 0) << 60
                | shape;
        }
        facts[..s.nodes.len()].sort_unstable();
        let cl = &s.clients[c];
        let fields = (
            cl.phase,
            cl.t0,
            cl.attempts_left,
            cl.lease_until,
            cl.process,
        );
        (fields, facts)
    };
    let sigs: SmallVec<[_; 4]> = (0..s.clients.len()).map(signature).collect();
    let mut order: SmallVec<[u8; 8]> = (0..s.clients.len() as u8).collect();
    order.sort_by(|&a, &b| sigs[a as usize].cmp(&sigs[b as usize]));
    let mut out = SmallVec::new();
    arrange(
        &order,
        &|a, b| sigs[a] == sigs[b],
        0,
        &mut SmallVec::new(),
        &mut out,
    );
    out
}

/// Completes `prefix` (the clients at places `0..i`) in every way that puts at each
/// later place a client not yet placed with the signature of `sorted`'s client there,
/// and pushes each order as places (`to[c]`), up to [`MAX_CANDIDATES`]. With every tie
/// tried, symmetric states get the same candidates.
fn arrange(
    sorted: &[u8],
    tied: &dyn Fn(usize, usize) -> bool,
    placed: u8,
    prefix: &mut SmallVec<[u8; 8]>,
    out: &mut SmallVec<[[u8; 8]; 6]>,
) {
    let i = prefix.len();
    if i == sorted.len() {
        let mut to = [0u8; 8];
        for (place, &c) in prefix.iter().enumerate() {
            to[c as usize] = place as u8;
        }
        out.push(to);
        return;
    }
    for c in 0..sorted.len() {
        if out.len() >= MAX_CANDIDATES {
            return;
        }
        if placed & (1 << c) == 0 && tied(c, sorted[i] as usize) {
            prefix.push(c as u8);
            arrange(sorted, tied, placed | 1 << c, prefix, out);
            prefix.pop();
        }
    }
}

/// Sorts the nodes by everything but their names, which the canonical form has reset.
fn sort_nodes(s: &mut RedlockState) {
    s.nodes
        .sort_unstable_by_key(|n| (n.tried, n.got, n.cut, n.offset, n.down_since, n.server));
}

/// Moves client `c` to place `to[c]`: its record, its bits on every node, and its name
/// in every server.
fn rename_clients(s: &mut RedlockState, to: &[u8]) {
    if to.iter().enumerate().all(|(i, &p)| i == p as usize) {
        return;
    }
    let moved = |bits: u8| {
        (0..to.len())
            .filter(|&c| bits & (1 << c) != 0)
            .fold(0u8, |m, c| m | 1 << to[c])
    };
    for n in &mut s.nodes {
        n.tried = moved(n.tried);
        n.got = moved(n.got);
        n.cut = moved(n.cut);
        n.server.rename_clients(to, client_value);
    }
    let old = s.clients.clone();
    for (c, cl) in old.into_iter().enumerate() {
        s.clients[to[c] as usize] = cl;
    }
}

#[cfg(test)]
mod tests {
    use stateright::Model;

    use std::collections::HashMap;

    use super::*;
    use crate::kernel::Budget;
    use crate::redis::replication::Node;
    use crate::redis::spec::Value;
    use crate::redis::NodeRef;
    use crate::redlock::RlAction::{self, Decide, Send, Tick};
    use crate::registry::Fault;

    fn model() -> RedlockModel {
        crate::redlock::tests::small(3, Budget::of(&[(Fault::Restart, 1)]), 2)
    }

    fn play(m: &RedlockModel, steps: &[RlAction]) -> RedlockState {
        let mut s = m.init_states().remove(0);
        for a in steps {
            s = m.next_state(&s, a.clone()).expect("enabled");
        }
        s
    }

    fn form(m: &RedlockModel, s: &RedlockState) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&m.canonical_state(s), &mut out);
        out
    }

    #[test]
    fn states_that_differ_by_client_names_have_one_form() {
        let m = model();
        let a = play(&m, &[Send(0, 0), Send(1, 1), Send(0, 1), Send(2, 2)]);
        // The same run with c0 → c1 → c2 → c0.
        let b = play(&m, &[Send(1, 0), Send(2, 1), Send(1, 1), Send(0, 2)]);
        assert_ne!(a, b);
        assert_eq!(form(&m, &a), form(&m, &b));
        // And with the nodes permuted as well.
        let c = play(&m, &[Send(1, 2), Send(2, 0), Send(1, 0), Send(0, 1)]);
        assert_eq!(form(&m, &a), form(&m, &c));
    }

    #[test]
    fn states_that_differ_in_who_holds_what_stay_apart() {
        let m = model();
        // c0 holds two nodes and c1 one, against c0 one and c1 two: no renaming maps
        // one onto the other once c2's tries are counted too.
        let a = play(&m, &[Send(0, 0), Send(0, 1), Send(1, 2), Send(2, 0)]);
        let b = play(&m, &[Send(0, 0), Send(1, 1), Send(1, 2), Send(2, 0)]);
        assert_ne!(form(&m, &a), form(&m, &b));
    }

    #[test]
    fn a_spent_attempt_forgets_what_it_got() {
        let m = model();
        // Each client wins one node of three and fails its first attempt at t=0; its
        // second attempt after one tick cannot succeed (validity 2 − 1 − 1 = 0), so
        // what it gets no longer matters, nor when the attempt started.
        let mut steps = vec![Send(0, 0), Send(1, 1), Send(2, 2)];
        steps.extend([
            Send(0, 1),
            Send(0, 2),
            Send(1, 0),
            Send(1, 2),
            Send(2, 0),
            Send(2, 1),
        ]);
        steps.extend([Decide(0), Decide(1), Decide(2), Tick]);
        let after_tick = play(&m, &steps);
        let got = m.next_state(&after_tick, Send(2, 0)).expect("send");
        assert!(got.nodes[0].got & 0b100 != 0, "c2 got redis0");
        let spent = |s: &RedlockState| {
            let mut s = s.clone();
            s.nodes[0].got = 0;
            s
        };
        assert_eq!(form(&m, &got), form(&m, &spent(&got)));
        // Within its validity the same success counts.
        let fresh = play(&m, &[Send(2, 0)]);
        assert_ne!(form(&m, &fresh), form(&m, &spent(&fresh)));
    }

    /// The least encoding over every renaming of clients and every order of nodes,
    /// after the same reset of values: the canonical form by brute force.
    fn brute_form(m: &RedlockModel, s: &RedlockState) -> Vec<u8> {
        fn perms(n: usize) -> Vec<Vec<u8>> {
            if n == 0 {
                return vec![vec![]];
            }
            let mut out = Vec::new();
            for p in perms(n - 1) {
                for at in 0..=p.len() {
                    let mut q = p.clone();
                    q.insert(at, (n - 1) as u8);
                    out.push(q);
                }
            }
            out
        }
        let mut base = s.clone();
        m.forget_dead_values(&mut base);
        for n in &mut base.nodes {
            n.name = 0;
        }
        let mut best: Option<Vec<u8>> = None;
        for to in perms(s.clients.len()) {
            for order in perms(s.nodes.len()) {
                // Renamed here by hand, not by the code under test.
                let mut c = base.clone();
                for (k, cl) in base.clients.iter().enumerate() {
                    c.clients[to[k] as usize] = cl.clone();
                }
                let moved = |bits: u8| {
                    (0..to.len())
                        .filter(|&k| bits & (1 << k) != 0)
                        .fold(0u8, |m, k| m | 1 << to[k])
                };
                for n in &mut c.nodes {
                    n.tried = moved(n.tried);
                    n.got = moved(n.got);
                    n.cut = moved(n.cut);
                    let mut server: Node = (*n.server).clone();
                    server.creator = server.creator.map(|k| to[k as usize]);
                    for e in server.db.keys.values_mut() {
                        if let Value::Str(v) = &mut e.value {
                            let k: usize = v[1..].parse().expect("a client's value");
                            *v = format!("c{}", to[k]);
                        }
                    }
                    n.server = NodeRef::new(server);
                }
                c.nodes = order.iter().map(|&i| c.nodes[i as usize].clone()).collect();
                let mut e = Vec::new();
                encode(&c, &mut e);
                if best.as_ref().is_none_or(|b| e < *b) {
                    best = Some(e);
                }
            }
        }
        best.unwrap_or_default()
    }

    #[test]
    fn the_canonical_form_joins_exactly_the_states_brute_force_joins() {
        joins_exactly_what_brute_force_joins(&RedlockModel {
            faults: Budget::of(&[(Fault::Restart, 1), (Fault::Jump, 1), (Fault::Pause, 1)]),
            ..model()
        });
        // A split tells clients and nodes apart by which side they are on.
        joins_exactly_what_brute_force_joins(&RedlockModel {
            faults: Budget::of(&[(Fault::Partition, 1)]),
            ..model()
        });
    }

    fn joins_exactly_what_brute_force_joins(m: &RedlockModel) {
        let mut seen = std::collections::HashSet::new();
        let mut queue: std::collections::VecDeque<_> = m.init_states().into();
        let (mut by_form, mut by_brute) = (HashMap::new(), HashMap::new());
        let mut actions = Vec::new();
        while let Some(s) = queue.pop_front() {
            if seen.len() >= 30_000 || !seen.insert(s.clone()) {
                continue;
            }
            let form = form(m, &s);
            let brute = brute_form(m, &s);
            assert_eq!(
                by_form.entry(form.clone()).or_insert(brute.clone()),
                &brute,
                "joined two states that no renaming maps onto each other: {s:?}"
            );
            assert_eq!(
                by_brute.entry(brute).or_insert(form.clone()),
                &form,
                "kept apart two renamings of one state: {s:?}"
            );
            actions.clear();
            m.actions(&s, &mut actions);
            queue.extend(actions.drain(..).filter_map(|a| m.next_state(&s, a)));
        }
        assert!(
            by_form.len() < seen.len() / 4,
            "{} of {}",
            by_form.len(),
            seen.len()
        );
    }
}
