//! Successor generation for the search, on every thread, in a pipeline.
//!
//! Expanding a state (its successors, their canonical encodings and fingerprints) is
//! pure and takes most of a search's time; deciding which successors are new is not,
//! and decides which path is the shortest. So [`super::bfs`] cuts its queue into chunks
//! numbered in queue order ([`Pipeline::submit`]); any thread expands any chunk, and
//! the search merges the expansions strictly in that order ([`Pipeline::next`]): the
//! visited set sees exactly the sequence a one-threaded search would, and finds the
//! same states, parents and stories, however the threads happened to run.
//!
//! The merging thread never waits while there is a chunk to expand: it expands one
//! itself. The helpers run ahead of the merge, but only a few chunks ahead, so their
//! successors do not pile up in memory. Each drops at once every successor already
//! stored (most of them: a state is reached by many paths), and only the rest comes
//! back for the merge. Buffers go round: an expanded chunk's buffer and a merged
//! expansion's buffer are reused, so a long search allocates its buffers once.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::Scope;

use stateright::Model;

use super::encode::fingerprint;
use super::visited::Seen;
use super::Symmetry;

/// How many successors are generated between a successor's prefetch and its lookup:
/// a few states' worth, time enough for a cache miss (about 100 ns) to be served.
const LAG: usize = 8;

/// How many successors an expansion adds to its buffer before it drops the stored ones
/// among them.
const COMPACT_AT: usize = 1 << 13;

/// Part of the queue: states of one depth, each with its index in the visited set.
pub(super) struct Chunk<S> {
    /// Their depth.
    pub(super) depth: usize,
    /// `(state, index)`, in queue order.
    pub(super) states: Vec<(S, u32)>,
}

/// A successor not yet in the visited set when its chunk was expanded.
pub(super) struct Fresh<S> {
    /// The fingerprint of its canonical encoding.
    pub(super) fp: [u64; 2],
    /// The index of the state it was generated from.
    pub(super) parent: u32,
    /// The successor.
    pub(super) state: S,
}

/// What expanding a chunk gave.
pub(super) struct Expanded<S> {
    /// The chunk's depth.
    pub(super) depth: usize,
    /// States the chunk held.
    pub(super) expanded: usize,
    /// Successors generated, stored ones included.
    pub(super) generated: usize,
    /// The successors not stored yet, in the order generated.
    pub(super) fresh: Vec<Fresh<S>>,
    /// The chunk's buffer, emptied, for the queue to reuse.
    pub(super) spare: Vec<(S, u32)>,
}

/// Reused buffers of one thread.
struct Expander<M: Model> {
    actions: Vec<M::Action>,
    encoding: Vec<u8>,
    /// Whether each successor of the chunk being expanded was stored already, in
    /// generation order.
    stored: Vec<bool>,
    /// See [`super::Limits::symmetry`].
    symmetry: bool,
}

impl<M> Expander<M>
where
    M: Symmetry,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug,
    M::Action: Clone + std::fmt::Debug,
{
    fn new(symmetry: bool) -> Self {
        Expander {
            actions: Vec::new(),
            encoding: Vec::new(),
            stored: Vec::new(),
            symmetry,
        }
    }

    /// Looks up the successors of `fresh` not looked up yet and drops every one already
    /// stored. The order is kept: `fresh` is in generation order, as the merge needs.
    fn drop_stored(
        &mut self,
        seen: &super::visited::SeenNow<'_>,
        fresh: &mut Vec<Fresh<M::State>>,
    ) {
        for f in &fresh[self.stored.len()..] {
            self.stored.push(seen.contains(f.fp));
        }
        let mut stored = self.stored.iter();
        fresh.retain(|_| !stored.next().copied().unwrap_or(false));
        // What is left is unstored, as far as this expansion knows.
        self.stored.clear();
        self.stored.resize(fresh.len(), false);
    }

    fn expand(
        &mut self,
        model: &M,
        chunk: Chunk<M::State>,
        seen: &Seen,
        mut fresh: Vec<Fresh<M::State>>,
    ) -> Expanded<M::State> {
        let seen = seen.hold();
        let mut generated = 0;
        let mut states = chunk.states;
        // Each successor goes straight into `fresh`, and is looked up once `LAG` younger
        // ones were generated (by when its slot is in the cache); those already stored
        // are dropped in passes over `fresh`. A state moved through a queue of its own
        // first was two more copies of every successor, most of which are stored ones.
        fresh.clear();
        self.stored.clear();
        let mut kept = 0;
        for (state, parent) in &states {
            self.actions.clear();
            model.actions(state, &mut self.actions);
            for a in self.actions.drain(..) {
                let Some(next) = model.next_state(state, a) else {
                    continue;
                };
                generated += 1;
                self.encoding.clear();
                super::stored_form(model, &next, self.symmetry, &mut self.encoding);
                let fp = fingerprint(&self.encoding);
                seen.prefetch(fp);
                fresh.push(Fresh {
                    fp,
                    parent: *parent,
                    state: next,
                });
                // Looked up once `LAG` younger ones were generated.
                while fresh.len() > self.stored.len() + LAG {
                    let at = self.stored.len();
                    self.stored.push(seen.contains(fresh[at].fp));
                }
            }
            // A model of many successors per state would otherwise hold a whole
            // chunk's successors, stored ones included, until the chunk's end.
            if fresh.len() >= kept + COMPACT_AT {
                self.drop_stored(&seen, &mut fresh);
                kept = fresh.len();
            }
        }
        self.drop_stored(&seen, &mut fresh);
        let expanded = states.len();
        states.clear();
        Expanded {
            depth: chunk.depth,
            expanded,
            generated,
            fresh,
            spare: states,
        }
    }
}

/// What the threads share, under one lock.
struct Board<S> {
    /// Chunks not taken yet, with their numbers, in order.
    jobs: VecDeque<(u64, Chunk<S>)>,
    /// Expansions by number from `base` on; `None` while its chunk is waiting or
    /// being expanded.
    done: VecDeque<Option<Expanded<S>>>,
    /// The number of `done`'s first entry: the next expansion to merge.
    base: u64,
    /// Chunks taken and not merged yet (a helper waits while this is at its limit).
    ahead: usize,
    /// Emptied `fresh` buffers.
    buffers: Vec<Vec<Fresh<S>>>,
    /// The search is over: helpers leave.
    closed: bool,
    /// A helper panicked: the search cannot finish.
    broken: bool,
}

/// What the threads of a search share; it outlives them.
pub(super) struct Shared<S> {
    board: Mutex<Board<S>>,
    /// A job came (or the board closed) or `ahead` fell: for helpers.
    work: Condvar,
    /// An expansion came in: for the merging thread.
    result: Condvar,
}

impl<S> Shared<S> {
    pub(super) fn new() -> Self {
        Shared {
            board: Mutex::new(Board {
                jobs: VecDeque::new(),
                done: VecDeque::new(),
                base: 0,
                ahead: 0,
                buffers: Vec::new(),
                closed: false,
                broken: false,
            }),
            work: Condvar::new(),
            result: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Board<S>> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Files an expansion under its number.
    fn file(&self, seq: u64, out: Expanded<S>) {
        let mut board = self.lock();
        let at = (seq - board.base) as usize;
        board.done[at] = Some(out);
        drop(board);
        self.result.notify_one();
    }
}

/// Marks the board broken if a helper unwinds, so the merge does not wait for it.
struct Watch<'a, S>(&'a Shared<S>);

impl<S> Drop for Watch<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().broken = true;
            self.0.result.notify_all();
        }
    }
}

/// The merging thread's side of the pipeline; helpers run while it lives.
pub(super) struct Pipeline<'m, M: Model> {
    model: &'m M,
    seen: Seen,
    shared: &'m Shared<M::State>,
    own: Expander<M>,
    /// The number of the next chunk submitted.
    next_seq: u64,
    /// How many chunks the helpers may hold expanded or in hand.
    limit: usize,
}

impl<'m, M> Pipeline<'m, M>
where
    M: Symmetry + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send,
    M::Action: Clone + std::fmt::Debug,
{
    /// Starts `threads - 1` helpers in `scope`; they leave when the pipeline is dropped.
    pub(super) fn start<'s>(
        scope: &'s Scope<'s, '_>,
        model: &'m M,
        shared: &'m Shared<M::State>,
        seen: Seen,
        threads: usize,
        symmetry: bool,
    ) -> Self
    where
        'm: 's,
    {
        let helpers = threads.max(1) - 1;
        let limit = 2 * helpers + 2;
        for _ in 0..helpers {
            let seen = seen.clone();
            scope.spawn(move || {
                let watch = Watch(shared);
                let mut expander = Expander::new(symmetry);
                loop {
                    let mut board = watch.0.lock();
                    while !board.closed && (board.jobs.is_empty() || board.ahead >= limit) {
                        board = watch.0.work.wait(board).unwrap_or_else(|e| e.into_inner());
                    }
                    let Some((seq, chunk)) = board.jobs.pop_front().filter(|_| !board.closed)
                    else {
                        return;
                    };
                    board.ahead += 1;
                    let buffer = board.buffers.pop().unwrap_or_default();
                    drop(board);
                    let out = expander.expand(model, chunk, &seen, buffer);
                    watch.0.file(seq, out);
                }
            });
        }
        Pipeline {
            model,
            seen,
            shared,
            own: Expander::new(symmetry),
            next_seq: 0,
            limit,
        }
    }

    /// Queues `chunk` for expansion, after every chunk submitted before it.
    pub(super) fn submit(&mut self, chunk: Chunk<M::State>) {
        let mut board = self.shared.lock();
        board.jobs.push_back((self.next_seq, chunk));
        board.done.push_back(None);
        self.next_seq += 1;
        let wake = board.ahead < self.limit;
        drop(board);
        if wake {
            self.shared.work.notify_one();
        }
    }

    /// The expansion of the oldest chunk not merged yet, or `None` once every
    /// submitted chunk is merged and `starving` has nothing more to submit. While that
    /// expansion is not ready, this thread expands waiting chunks itself, and asks
    /// `starving` for a chunk (the queue's unfinished last one) before it would idle.
    pub(super) fn next(
        &mut self,
        starving: &mut dyn FnMut() -> Option<Chunk<M::State>>,
    ) -> Option<Expanded<M::State>> {
        let mut board = self.shared.lock();
        loop {
            assert!(!board.broken, "a search thread panicked");
            if let Some(Some(_)) = board.done.front() {
                let out = board.done.pop_front().flatten();
                board.base += 1;
                board.ahead -= 1;
                drop(board);
                self.shared.work.notify_one();
                return out;
            }
            if let Some((seq, chunk)) = board.jobs.pop_front() {
                board.ahead += 1;
                let buffer = board.buffers.pop().unwrap_or_default();
                drop(board);
                let out = self.own.expand(self.model, chunk, &self.seen, buffer);
                self.shared.file(seq, out);
                board = self.shared.lock();
                continue;
            }
            // Nothing to merge or expand: queue the unfinished last chunk, if any,
            // rather than idle.
            drop(board);
            if let Some(chunk) = starving() {
                self.submit(chunk);
                board = self.shared.lock();
                continue;
            }
            board = self.shared.lock();
            if board.done.is_empty() {
                return None;
            }
            // A helper holds the oldest chunk.
            if matches!(board.done.front(), Some(None)) && board.jobs.is_empty() {
                board = self
                    .shared
                    .result
                    .wait(board)
                    .unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// Hands a merged expansion's buffer back for reuse.
    pub(super) fn recycle(&mut self, mut fresh: Vec<Fresh<M::State>>) {
        fresh.clear();
        self.shared.lock().buffers.push(fresh);
    }
}

impl<M: Model> Drop for Pipeline<'_, M> {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.work.notify_all();
    }
}
