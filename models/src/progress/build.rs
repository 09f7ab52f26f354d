//! Building a model's progress graph breadth first, a level at a time, on every
//! thread the limits allow.
//!
//! Expanding a state (its successors, their encodings and fingerprints, what each
//! successor's clients are doing) is pure and takes most of the time; numbering the
//! successors is not, and decides which lasso is the shortest. So a level is taken in
//! parts of a few thousand states; any thread expands any part, and one thread numbers
//! the parts' successors strictly in order (expanding a part itself rather than wait
//! for the one it needs): the graph, its numbering and every lasso are those of a
//! one-threaded search. A worker notes the number of each successor the table already
//! holds and drops its body, so only the successors that may be new are kept and
//! looked up again.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use crate::check::{resident_bytes, Limits, Seen, Stop, Visited};
use crate::kernel::Stage;

use super::fair::{Class, Edge, Graph};
use super::graph::{asking, bits, print, Built, Passing};
use super::Progress;

/// Below this many states a level is expanded on one thread: a hand-over costs more.
const PARALLEL_FROM: usize = 4096;

/// States expanded as one part.
const CHUNK: usize = 2048;

/// A successor as a worker found it.
struct Succ {
    /// Its fingerprint.
    fp: [u64; 2],
    /// Its number, if the table held it when the worker looked (numbers never change).
    known: Option<u32>,
    /// The step's fairness class.
    class: Option<Class>,
    /// Its clients that wait (bit `c`).
    waits: u64,
    /// Its clients that ask for the lock and do not hold it (bit `c`).
    asks: u64,
    /// Its clients that hold the lock.
    holds: u64,
    /// How many clients it has (at most 64 counted).
    clients: u8,
}

/// What expanding part of a level gave, in the part's order.
struct Part<S> {
    /// Every source's successors, source after source.
    succs: Vec<Succ>,
    /// The successors not `known`, in order: only these may be new.
    fresh: Vec<S>,
    /// How many successors each source has.
    counts: Vec<u32>,
    /// Whether time stops at each source with a deadline still ahead.
    cut: Vec<bool>,
    /// Out-of-order grants: (source within the part, successor within the source,
    /// who got the lock, who was passed over).
    passing: Vec<(u32, u32, usize, usize)>,
}

impl<S> Part<S> {
    fn new() -> Self {
        Part {
            succs: Vec::new(),
            fresh: Vec::new(),
            counts: Vec::new(),
            cut: Vec::new(),
            passing: Vec::new(),
        }
    }
}

/// Emptied parts, whose buffers the next expansions fill: a part's buffers run to
/// megabytes, and an allocator may hand freed ones back to the system, so that every
/// fresh one costs its pages again.
struct Spares<S>(Mutex<Vec<Part<S>>>);

impl<S> Spares<S> {
    fn take(&self) -> Part<S> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(Part::new)
    }

    fn give(&self, part: Part<S>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(part);
    }
}

/// Expands `states` into `part`'s emptied buffers, checking `seen` to drop the bodies
/// of stored successors.
fn expand<M>(model: &M, states: &[M::State], seen: &Seen, part: Part<M::State>) -> Part<M::State>
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let ordered = model.ordered();
    let repeats = model.repeats();
    let seen = seen.hold();
    let mut part = part;
    let mut actions = Vec::new();
    let mut buf = Vec::new();
    for (i, s) in states.iter().enumerate() {
        actions.clear();
        model.actions(s, &mut actions);
        let first = part.succs.len();
        for a in actions.drain(..) {
            let class = model.fairness(&a);
            let Some(t) = model.next_state(s, a) else {
                continue;
            };
            if !model.within_boundary(&t) {
                continue;
            }
            let t = model.reduce(t);
            let fp = print(&t, &mut buf);
            let stages = model.stages(&t);
            let known = seen.index_of(fp);
            part.succs.push(Succ {
                fp,
                known,
                class,
                waits: bits(&stages, |s| s == Stage::Queued),
                asks: bits(&stages, |s| asking(s, repeats)),
                holds: bits(&stages, Stage::holds),
                clients: stages.len().min(64) as u8,
            });
            if known.is_none() {
                part.fresh.push(t);
            }
        }
        let count = part.succs.len() - first;
        part.counts.push(count as u32);
        let stops = model.clock_at_bound(s) || count == 0;
        part.cut.push(stops && model.deadline_ahead(s));
        if ordered {
            note_passing(model, s, &part.succs[first..], i as u32, &mut part.passing);
        }
    }
    part
}

/// Notes each step out of `s` that grants the lock to a client while one whose request
/// came first still waits.
fn note_passing<M>(
    model: &M,
    s: &M::State,
    succs: &[Succ],
    source: u32,
    out: &mut Vec<(u32, u32, usize, usize)>,
) where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let stages = model.stages(s);
    let (waits, holds) = (
        bits(&stages, |s| s == Stage::Queued),
        bits(&stages, Stage::holds),
    );
    let clients = stages.len().min(64);
    for (j, t) in succs.iter().enumerate() {
        let granted = t.holds & !holds;
        for c in (0..clients).filter(|c| granted & (1 << c) != 0) {
            let Some(mine) = model.arrival(s, c) else {
                continue;
            };
            let first = (0..clients).find(|&d| {
                d != c
                    && waits & (1 << d) != 0
                    && model.arrival(s, d).is_some_and(|theirs| theirs < mine)
            });
            if let Some(d) = first {
                out.push((source, j as u32, c, d));
            }
        }
    }
}

/// Every state reachable from the model's initial states, breadth first on up to
/// `limits.threads` threads; `Err` with the limit that stopped it first.
pub(super) fn build<M>(model: &M, limits: &Limits) -> Result<Built, Stop>
where
    M: Progress + Sync,
    M::State: Clone + Hash + Eq + Debug + Send + Sync,
    M::Action: Clone + Debug,
{
    let mut built = Built {
        index: Visited::new(),
        waits: Vec::new(),
        asks: Vec::new(),
        holds: Vec::new(),
        cut: Vec::new(),
        graph: Graph::default(),
        clients: 0,
        passing: Vec::new(),
    };
    let mut level: Vec<M::State> = Vec::new();
    let mut buf = Vec::new();
    for s in model.init_states() {
        let s = model.reduce(s);
        let fp = print(&s, &mut buf);
        let id = match built.index.insert_or_find(fp, None) {
            Err(known) => known,
            Ok(id) => {
                let stages = model.stages(&s);
                built.clients = built.clients.max(stages.len().min(64));
                built.waits.push(bits(&stages, |s| s == Stage::Queued));
                built
                    .asks
                    .push(bits(&stages, |s| asking(s, model.repeats())));
                built.holds.push(bits(&stages, Stage::holds));
                level.push(s);
                id
            }
        };
        if !built.graph.init.contains(&id) {
            built.graph.init.push(id);
        }
    }
    let started = Instant::now();
    let base = resident_bytes().unwrap_or(0);
    let threads = limits.threads.max(1);
    let seen = built.index.seen();
    // The number of the next state to expand: states are numbered in the order found,
    // and expanded in that order.
    let mut source = 0u32;
    let mut next = Vec::new();
    let spares = Spares(Mutex::new(Vec::new()));
    while !level.is_empty() {
        if let Some(stop) = Stop::of_time(limits, started.elapsed()) {
            return Err(stop);
        }
        let grown = resident_bytes().map_or(0, |b| b.saturating_sub(base));
        if limits.max_bytes.is_some_and(|m| grown >= m) {
            return Err(Stop::Memory);
        }
        let chunks: Vec<&[M::State]> = level.chunks(CHUNK).collect();
        if threads == 1 || level.len() < PARALLEL_FROM {
            for chunk in &chunks {
                let mut part = expand(model, chunk, &seen, spares.take());
                number(&mut built, &mut part, &mut source, &mut next, limits)?;
                spares.give(part);
            }
        } else {
            let claim = AtomicUsize::new(0);
            let (chunks, claim, seen, spares) = (&chunks, &claim, &seen, &spares);
            let expand_next = move || {
                let i = claim.fetch_add(1, Ordering::Relaxed);
                chunks
                    .get(i)
                    .map(|chunk| (i, expand(model, chunk, seen, spares.take())))
            };
            std::thread::scope(|scope| {
                // Bounded: a helper that runs too far ahead of the numbering waits.
                let (tx, rx) = mpsc::sync_channel::<(usize, Part<M::State>)>(threads);
                for _ in 1..threads {
                    let tx = tx.clone();
                    scope.spawn(move || {
                        while let Some(done) = expand_next() {
                            if tx.send(done).is_err() {
                                break;
                            }
                        }
                    });
                }
                drop(tx);
                // Parts number in chunk order; this thread expands a chunk itself
                // rather than wait for the one it needs next.
                let mut pending = BTreeMap::new();
                let mut want = 0;
                while want < chunks.len() {
                    if let Some(mut part) = pending.remove(&want) {
                        number(&mut built, &mut part, &mut source, &mut next, limits)?;
                        spares.give(part);
                        want += 1;
                    } else if let Ok((i, part)) = rx.try_recv() {
                        pending.insert(i, part);
                    } else if let Some((i, part)) = expand_next() {
                        pending.insert(i, part);
                    } else if let Ok((i, part)) = rx.recv() {
                        pending.insert(i, part);
                    } else {
                        break;
                    }
                }
                // Returning drops the receiver: a helper still sending stops.
                Ok::<(), Stop>(())
            })?;
        }
        std::mem::swap(&mut level, &mut next);
        next.clear();
    }
    Ok(built)
}

/// Numbers a part's successors in order (the sources numbered from `source` on), adds
/// its edges, and queues the new states on `next`; the part is left empty.
fn number<S>(
    built: &mut Built,
    part: &mut Part<S>,
    source: &mut u32,
    next: &mut Vec<S>,
    limits: &Limits,
) -> Result<(), Stop> {
    let mut succs = part.succs.drain(..);
    let mut fresh = part.fresh.drain(..);
    let mut out = Vec::new();
    let mut passing = part.passing.drain(..).peekable();
    let counts = part.counts.drain(..).zip(part.cut.drain(..));
    for (i, (count, cut)) in counts.enumerate() {
        out.clear();
        for t in succs.by_ref().take(count as usize) {
            let to = match t.known {
                Some(known) => known,
                None => {
                    // Kept by the worker, in order with the successors not known.
                    let body = fresh.next();
                    match built.index.insert_or_find(t.fp, None) {
                        Err(known) => known,
                        Ok(_) if built.index.len() > limits.max_states => return Err(Stop::States),
                        Ok(id) => {
                            built.clients = built.clients.max(usize::from(t.clients));
                            built.waits.push(t.waits);
                            built.asks.push(t.asks);
                            built.holds.push(t.holds);
                            next.extend(body);
                            id
                        }
                    }
                }
            };
            out.push(Edge { to, class: t.class });
        }
        while let Some((_, j, granted, passed)) = passing.next_if(|p| p.0 == i as u32) {
            built.passing.push(Passing {
                from: *source,
                edge: out[j as usize],
                granted,
                passed,
            });
        }
        built.graph.push_node(out.drain(..));
        built.cut.push(cut);
        *source += 1;
    }
    Ok(())
}
