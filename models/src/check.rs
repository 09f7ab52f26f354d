//! The search behind every verdict: a breadth-first search over a stateright [`Model`]
//! that keeps the *first* discovery of each property.
//!
//! stateright 0.31's own BFS overwrites a discovery whenever another thread or a later
//! state finds the same property, so its paths are not guaranteed shortest; this one
//! dequeues states in order of depth and checks each state when it is first reached, so
//! the first violating state of a property is at the least depth any violating state
//! has, and its parent chain is a shortest counterexample.
//!
//! Each visited state is stored once (`Visited`), as a 128-bit fingerprint of the
//! compact encoding of its canonical form ([`Symmetry::canonical`], where a model
//! exploits symmetry), with its parent as an index: the queue holds a state and its
//! index, and paths are rebuilt at the end by replaying concrete states, so stories
//! never show a permuted state. (The search before kept 64-bit SipHash fingerprints;
//! 128 bits make a collision, which could hide a state, vanishingly unlikely.)

mod deepening;
mod encode;
mod expand;
mod fast_hash;
mod memory;
mod narrate;
mod sweep;
mod symmetry;
mod visited;

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::{Expectation, Model};

use crate::registry::Property;

pub use deepening::iterative_deepening;
pub use encode::{encode, fingerprint};
pub use fast_hash::FastHash;
pub use memory::resident_bytes;
pub use narrate::{happened, pair, Narrate, DEFAULT_LANE};
pub use symmetry::Symmetry;
pub use visited::Store;
pub(crate) use visited::{Seen, Visited};

/// Limits on a search; reaching one before the answer makes the verdict unknown.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Stop after this many unique states.
    pub max_states: usize,
    /// Stop after this much time.
    pub timeout: Option<Duration>,
    /// Stop when the process's resident memory has grown by this many bytes since the
    /// search began (read every few thousand states, so it may overshoot by a little).
    pub max_bytes: Option<usize>,
    /// Threads that generate successors (the answer does not depend on it).
    pub threads: usize,
    /// Store states by their canonical form ([`Symmetry::canonical`]), so states that
    /// differ only by a permutation of interchangeable clients or nodes, or in values
    /// no step reads again, count once.
    /// Off, every state counts: slower, and the same verdicts and shortest lengths (a
    /// test holds the two against each other on every catalog scenario).
    pub symmetry: bool,
    /// How visited states are stored: exactly, or in less memory at the price of the
    /// verdict "holds" ([`Store`]).
    pub store: Store,
    /// Stop at the first violation of any property (Spin's and TLC's default): its
    /// story is as short as it would be, and the properties not yet violated are then
    /// unknown ([`Stop::FirstViolation`]).
    pub stop_at_first: bool,
}

/// The memory budget of a search unless told otherwise: a sixth of this machine's
/// RAM would do, but a fixed figure keeps verdicts the same on every machine.
pub const DEFAULT_MAX_BYTES: usize = 4 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_states: 50_000_000,
            timeout: None,
            max_bytes: Some(DEFAULT_MAX_BYTES),
            threads: default_threads(),
            symmetry: true,
            store: Store::Full,
            stop_at_first: false,
        }
    }
}

/// Set by [`interrupt`]: every search of this process stops at its next check.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Stops every search of this process where it is (a command's Ctrl-C handler calls
/// it): each answers with what it explored, [`Stop::Interrupt`] — unknown, unless a
/// violation was already proven. There is no way back: a process interrupted stays so.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Every core of this machine, up to eight (past that the merge on one thread bounds
/// the speed-up).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Which limit stopped a search before it had explored everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// [`Limits::max_states`] distinct states were reached.
    States,
    /// [`Limits::timeout`] passed.
    Time,
    /// [`Limits::max_bytes`] of memory were used.
    Memory,
    /// The user interrupted it ([`interrupt`]: Ctrl-C).
    Interrupt,
    /// A property was violated and [`Limits::stop_at_first`] asked for no more.
    FirstViolation,
}

impl Stop {
    /// The limit in words, for verdict lines.
    pub fn name(self) -> &'static str {
        match self {
            Stop::States => "state limit",
            Stop::Time => "time limit",
            Stop::Memory => "memory budget",
            Stop::Interrupt => "interrupt (Ctrl-C)",
            Stop::FirstViolation => "first violation (--stop-at-first)",
        }
    }

    /// The command-line flag that raises it; none for an interrupt.
    pub fn flag(self) -> &'static str {
        match self {
            Stop::States => "--max-states",
            Stop::Time => "--timeout",
            Stop::Memory => "--memory",
            Stop::Interrupt => "",
            Stop::FirstViolation => "no --stop-at-first",
        }
    }

    /// What happened, for a verdict line: "the search reached its time limit", "the
    /// search was interrupted (Ctrl-C)".
    pub fn phrase(self) -> String {
        match self {
            Stop::Interrupt => "the search was interrupted (Ctrl-C)".to_string(),
            _ => format!("the search reached its {}", self.name()),
        }
    }

    /// What would have let the search go on, in parentheses for a verdict line
    /// (`" (raise --timeout)"`); nothing for an interrupt.
    pub fn advice(self) -> String {
        match self {
            Stop::Interrupt => String::new(),
            Stop::FirstViolation => " (without --stop-at-first)".to_string(),
            _ => format!(" (raise {})", self.flag()),
        }
    }

    /// The time limit or an interrupt, whichever struck, after `elapsed` of a search
    /// held to `limits`: read wherever a search reads its clock.
    pub fn of_time(limits: &Limits, elapsed: Duration) -> Option<Stop> {
        if interrupted() {
            Some(Stop::Interrupt)
        } else if limits.timeout.is_some_and(|t| elapsed > t) {
            Some(Stop::Time)
        } else {
            None
        }
    }
}

/// Counts, for the report and the benchmark.
#[derive(Clone, Copy, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Successor states generated (with duplicates).
    pub states: usize,
    /// Distinct states (after symmetry reduction).
    pub unique_states: usize,
    /// Depth of the deepest level reached.
    pub max_depth: usize,
    /// Wall time in seconds.
    pub seconds: f64,
    /// States waiting to be expanded (for the progress line; not part of reports).
    #[serde(skip)]
    pub queue: usize,
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
    /// The limit that cut the search short, if one did.
    pub stopped: Option<Stop>,
    /// The counters.
    pub stats: Stats,
    /// One shortest counterexample per violated `always` property, in property order
    /// (in a bitstate sweep, which is depth first, one counterexample, not always the
    /// shortest). Each is proven: its path was replayed from an initial state through
    /// the model's own steps to a state that breaks the property.
    pub discoveries: Vec<Discovery<M>>,
    /// How the visited states were stored: with any but [`Store::Full`], a complete
    /// search with no discovery does not prove that none exists.
    pub store: Store,
    /// In a table store, an upper bound on the chance that a state was taken for
    /// another and its successors not explored; `None` for a bitstate sweep, which
    /// bounds nothing.
    pub collision_bound: Option<f64>,
}

/// How often (in generated states) the search reports progress and reads the clock.
const REPORT_EVERY: usize = 1 << 15;

/// States per chunk of the queue, the unit handed to a thread: enough to make a
/// hand-over cheap, few enough that their successors wait in memory only briefly.
const CHUNK: usize = 1024;

/// How many states ahead of its insert the merge fetches a state's table slot.
const MERGE_LAG: usize = 8;

/// The back of the queue: the chunk being filled, and the buffers to fill next.
struct Frontier<S> {
    filling: Option<expand::Chunk<S>>,
    spare: Vec<Vec<(S, u32)>>,
    /// States queued whose expansion is not merged yet.
    queued: usize,
}

impl<S> Frontier<S> {
    /// Queues `state`; the chunk being filled goes to `submit` once full, or when
    /// `state` is one level deeper.
    fn push(
        &mut self,
        state: S,
        index: u32,
        depth: usize,
        submit: &mut dyn FnMut(expand::Chunk<S>),
    ) {
        if let Some(c) = self
            .filling
            .take_if(|c| c.depth != depth || c.states.len() >= CHUNK)
        {
            submit(c);
        }
        let spare = &mut self.spare;
        let chunk = self.filling.get_or_insert_with(|| expand::Chunk {
            depth,
            states: spare.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK)),
        });
        chunk.states.push((state, index));
        self.queued += 1;
    }

    /// The chunk being filled, however full, for a thread that would otherwise idle.
    fn flush(&mut self) -> Option<expand::Chunk<S>> {
        self.filling.take().filter(|c| !c.states.is_empty())
    }
}

/// Explores `model` breadth-first; `progress` gets the counters now and then.
///
/// Successors are generated on [`Limits::threads`] threads and merged in queue order
/// (`expand`), so the visited states, their parents and every story are those of a
/// one-threaded search.
pub fn bfs<M>(model: &M, limits: Limits, progress: &mut dyn FnMut(&Stats)) -> Outcome<M>
where
    M: Symmetry + Sync,
    M::State: Clone + Hash + Eq + Debug + Send,
    M::Action: Clone + Debug,
{
    if let Store::Bitstate { log2_bits } = limits.store {
        return sweep::sweep(model, limits, log2_bits, progress);
    }
    let mut visited = Visited::with_store(limits.store);
    let shared = expand::Shared::new();
    std::thread::scope(|scope| {
        let pipeline = expand::Pipeline::start(
            scope,
            model,
            &shared,
            visited.seen(),
            limits.threads,
            limits.symmetry,
        );
        search(model, limits, progress, pipeline, &mut visited)
    })
}

/// What the search keeps while it runs: where each newly reached state is filed.
struct Search<'m, 'v, M: Model> {
    model: &'m M,
    /// The invariants, each with the registry property it was made from.
    properties: Vec<(Property, stateright::Property<M>)>,
    /// Per property, the index of the first state found violating it.
    found: Vec<Option<u32>>,
    visited: &'v mut Visited,
    frontier: Frontier<M::State>,
    pipeline: expand::Pipeline<'m, M>,
}

impl<M> Search<'_, '_, M>
where
    M: Symmetry + Sync,
    M::State: Clone + Hash + Eq + Debug + Send,
    M::Action: Clone + Debug,
{
    /// Files a state reached at `depth` from `parent`: a state already stored is
    /// dropped; a new one is checked now, when first reached (so the first violating
    /// state of a property is at the least depth), and queued unless it is outside
    /// the model's boundary.
    fn visit(&mut self, fp: [u64; 2], state: M::State, parent: Option<u32>, depth: usize) {
        let Some(index) = self.visited.insert_fingerprint(fp, parent) else {
            return;
        };
        for (found, (_, p)) in self.found.iter_mut().zip(&self.properties) {
            if found.is_none() && !(p.condition)(self.model, &state) {
                *found = Some(index);
            }
        }
        if self.model.within_boundary(&state) {
            let pipeline = &mut self.pipeline;
            self.frontier
                .push(state, index, depth, &mut |c| pipeline.submit(c));
        }
    }

    /// Every property has its counterexample: nothing left to search for.
    fn all_found(&self) -> bool {
        self.found.iter().all(Option::is_some)
    }
}

/// The search proper: a FIFO queue, each state checked when first reached.
fn search<M>(
    model: &M,
    limits: Limits,
    progress: &mut dyn FnMut(&Stats),
    pipeline: expand::Pipeline<'_, M>,
    visited: &mut Visited,
) -> Outcome<M>
where
    M: Symmetry + Sync,
    M::State: Clone + Hash + Eq + Debug + Send,
    M::Action: Clone + Debug,
{
    let start = Instant::now();
    let properties = invariants(model);
    let mut s = Search {
        model,
        found: vec![None; properties.len()],
        properties,
        visited,
        frontier: Frontier {
            filling: None,
            spare: Vec::new(),
            queued: 0,
        },
        pipeline,
    };
    let mut stats = Stats::default();
    let mut stopped = None;
    let rss_start = limits.max_bytes.and_then(|_| resident_bytes());

    let mut encoding = Vec::new();
    for init in model.init_states() {
        stats.states += 1;
        encoding.clear();
        stored_form(model, &init, limits.symmetry, &mut encoding);
        s.visit(encode::fingerprint(&encoding), init, None, 0);
    }
    let mut report_at = REPORT_EVERY;
    // Successors generated but not yet merged when a limit struck.
    let mut unmerged = 0;
    loop {
        if s.all_found() {
            break;
        }
        if limits.stop_at_first && s.found.iter().any(Option::is_some) {
            stopped = Some(Stop::FirstViolation);
            break;
        }
        if interrupted() {
            stopped = Some(Stop::Interrupt);
            break;
        }
        let frontier = &mut s.frontier;
        let Some(mut piece) = s.pipeline.next(&mut || frontier.flush()) else {
            break;
        };
        stats.max_depth = stats.max_depth.max(piece.depth);
        stats.states += piece.generated;
        s.frontier.queued -= piece.expanded;
        s.frontier.spare.push(piece.spare);
        let mut fresh = piece.fresh.drain(..);
        // Each insert probes the table; its slot is fetched a few inserts ahead.
        for f in fresh.as_slice().iter().take(MERGE_LAG) {
            s.visited.prefetch(f.fp);
        }
        while let Some(f) = fresh.next() {
            if let Some(ahead) = fresh.as_slice().get(MERGE_LAG - 1) {
                s.visited.prefetch(ahead.fp);
            }
            s.visit(f.fp, f.state, Some(f.parent), piece.depth + 1);
            if s.visited.len() >= limits.max_states {
                stopped = Some(Stop::States);
                break;
            }
        }
        unmerged = fresh.len();
        drop(fresh);
        s.pipeline.recycle(piece.fresh);
        if stats.states >= report_at {
            report_at = stats.states + REPORT_EVERY;
            stats.unique_states = s.visited.len();
            stats.queue = s.frontier.queued;
            stats.seconds = start.elapsed().as_secs_f64();
            progress(&stats);
            if let Some(stop) = Stop::of_time(&limits, start.elapsed()) {
                stopped = Some(stop);
            }
            let grown = rss_start.and_then(|s0| resident_bytes().map(|r| r.saturating_sub(s0)));
            if limits.max_bytes.zip(grown).is_some_and(|(max, g)| g > max) {
                stopped = Some(Stop::Memory);
            }
        }
        if stopped.is_some() {
            break;
        }
    }
    let Search {
        properties,
        found,
        visited,
        frontier,
        pipeline,
        ..
    } = s;
    drop(pipeline);
    // A limit reached with nothing left to expand cut nothing short.
    if frontier.queued == 0 && unmerged == 0 {
        stopped = None;
    }
    stats.unique_states = visited.len();
    stats.queue = frontier.queued + unmerged;
    stats.seconds = start.elapsed().as_secs_f64();

    let mut proven = true;
    let discoveries = properties
        .iter()
        .zip(&found)
        .filter_map(|((property, p), index)| {
            let path = rebuild(model, visited, (*index)?, limits.symmetry);
            // Only a path that replays to a state breaking the property proves it; one
            // that does not (a fingerprint collision) proves nothing, and the property
            // is then unknown.
            let breaks = path
                .last()
                .is_some_and(|(_, last)| !(p.condition)(model, last));
            proven &= breaks;
            breaks.then_some(Discovery {
                property: *property,
                path,
            })
        })
        .collect();
    Outcome {
        complete: stopped.is_none() && proven,
        stopped,
        stats,
        discoveries,
        store: limits.store,
        collision_bound: Some(visited.collision_bound()),
    }
}

/// The model's invariants, each with the registry property it was made from: models
/// name them through `Property::always`, so each maps back.
fn invariants<M: Model>(model: &M) -> Vec<(Property, stateright::Property<M>)> {
    model
        .properties()
        .into_iter()
        .filter(|p| matches!(p.expectation, Expectation::Always))
        .filter_map(|p| Property::of(&p).map(|named| (named, p)))
        .collect()
}

/// Appends what the search stores of `state` to `out`: the encoding of its canonical
/// form, or with `symmetry` off of the state itself.
fn stored_form<M>(model: &M, state: &M::State, symmetry: bool, out: &mut Vec<u8>)
where
    M: Symmetry,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    if symmetry {
        model.encode_canonical(state, out);
    } else {
        encode(state, out);
    }
}

/// Walks the parent indices back to an initial state, then replays forward from
/// concrete states, picking at each step a successor whose canonical encoding is the
/// next one on the chain.
fn rebuild<M>(
    model: &M,
    visited: &Visited,
    last: u32,
    symmetry: bool,
) -> Vec<(Option<M::Action>, M::State)>
where
    M: Symmetry,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut chain = vec![last];
    let mut cur = last;
    while let Some(p) = visited.parent(cur) {
        chain.push(p);
        cur = p;
    }
    chain.reverse();
    let mut buf = Vec::new();
    let mut is = |s: &M::State, want: u32| {
        buf.clear();
        stored_form(model, s, symmetry, &mut buf);
        visited.is(want, &buf)
    };
    // A depth-first walk along the chain: position k's candidates are the steps from
    // the path's state k − 1 to a state stored as `chain[k]`. A full store names one;
    // a compact one may name a sibling too (32 bits of its fingerprint agree), and
    // the walk then backs up and tries the next.
    let first: Vec<_> = model
        .init_states()
        .into_iter()
        .filter(|s| is(s, chain[0]))
        .map(|s| (None, s))
        .rev()
        .collect();
    let mut path: Vec<(Option<M::Action>, M::State)> = Vec::with_capacity(chain.len());
    let mut options = vec![first];
    while let Some(top) = options.last_mut() {
        let Some(step) = top.pop() else {
            options.pop();
            path.pop();
            continue;
        };
        path.push(step);
        let Some(&want) = chain.get(path.len()) else {
            return path;
        };
        let prev = &path[path.len() - 1].1;
        let mut actions = Vec::new();
        model.actions(prev, &mut actions);
        let mut next: Vec<_> = actions
            .into_iter()
            .filter_map(|a| model.next_state(prev, a.clone()).map(|s| (Some(a), s)))
            .filter(|(_, s)| is(s, want))
            .collect();
        next.reverse();
        options.push(next);
    }
    path
}

/// Extension used by [`bfs`]: successors without the double action generation of
/// [`Model::next_states`], into buffers the search reuses.
trait NextInto: Model {
    fn next_states_into(
        &self,
        state: &Self::State,
        actions: &mut Vec<Self::Action>,
        out: &mut Vec<Self::State>,
    ) {
        actions.clear();
        self.actions(state, actions);
        out.extend(actions.drain(..).filter_map(|a| self.next_state(state, a)));
    }
}

impl<M: Model> NextInto for M {}
