//! Successor generation for the search, split across threads.
//!
//! Expanding a state (its successors, their canonical encodings and fingerprints) is
//! pure and takes most of a search's time; deciding which successors are new is not,
//! and decides which path is the shortest. So [`super::bfs`] hands whole chunks of its
//! queue to the threads of a [`Pool`] and merges what they return on its own thread in
//! queue order: the visited set sees exactly the sequence a one-threaded search would,
//! and finds the same states, parents and stories.
//!
//! While the threads expand, nobody writes the visited set, so each drops at once every
//! successor already stored (most of them: a state is reached by many paths), and only
//! the rest is copied back for the merge.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::RwLock;
use std::thread::Scope;

use stateright::Model;

use super::encode::fingerprint;
use super::visited::Visited;
use super::Narrate;

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
    /// Successors generated, stored ones included.
    pub(super) generated: usize,
    /// The successors not stored yet, in the order generated.
    pub(super) fresh: Vec<Fresh<S>>,
}

/// Reused buffers of one thread.
struct Expander<M: Model> {
    actions: Vec<M::Action>,
    encoding: Vec<u8>,
}

impl<M> Expander<M>
where
    M: Narrate,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug,
    M::Action: Clone + std::fmt::Debug,
{
    fn new() -> Self {
        Expander {
            actions: Vec::new(),
            encoding: Vec::new(),
        }
    }

    fn expand(
        &mut self,
        model: &M,
        chunk: Chunk<M::State>,
        visited: &Visited,
    ) -> Expanded<M::State> {
        let mut out = Expanded {
            depth: chunk.depth,
            generated: 0,
            fresh: Vec::with_capacity(chunk.states.len()),
        };
        for (state, parent) in &chunk.states {
            self.actions.clear();
            model.actions(state, &mut self.actions);
            for a in self.actions.drain(..) {
                let Some(next) = model.next_state(state, a) else {
                    continue;
                };
                out.generated += 1;
                self.encoding.clear();
                model.encode_canonical(&next, &mut self.encoding);
                let fp = fingerprint(&self.encoding);
                if !visited.contains(fp) {
                    out.fresh.push(Fresh {
                        fp,
                        parent: *parent,
                        state: next,
                    });
                }
            }
        }
        out
    }
}

/// One helper thread: chunks in, their expansions out, in the order sent.
type Worker<S> = (Sender<Chunk<S>>, Receiver<Expanded<S>>);

/// The search's own thread plus `threads - 1` helpers, alive for one search (so each
/// keeps its thread-local caches, such as the Redis model's node operations).
pub(super) struct Pool<'m, M: Model> {
    model: &'m M,
    visited: &'m RwLock<Visited>,
    own: Expander<M>,
    workers: Vec<Worker<M::State>>,
}

impl<'m, M> Pool<'m, M>
where
    M: Narrate + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send,
    M::Action: Clone + std::fmt::Debug,
{
    /// Starts `threads - 1` helpers in `scope`; they end when the pool is dropped.
    pub(super) fn start<'s>(
        scope: &'s Scope<'s, '_>,
        model: &'m M,
        visited: &'m RwLock<Visited>,
        threads: usize,
    ) -> Self
    where
        'm: 's,
    {
        let workers = (1..threads.max(1))
            .map(|_| {
                let (job_tx, job_rx) = channel::<Chunk<M::State>>();
                let (out_tx, out_rx) = channel();
                scope.spawn(move || {
                    let mut expander = Expander::new();
                    for job in job_rx {
                        let done = {
                            let seen = visited.read().unwrap_or_else(|e| e.into_inner());
                            expander.expand(model, job, &seen)
                        };
                        if out_tx.send(done).is_err() {
                            break;
                        }
                    }
                });
                (job_tx, out_rx)
            })
            .collect();
        Pool {
            model,
            visited,
            own: Expander::new(),
            workers,
        }
    }

    /// How many threads expand.
    pub(super) fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Expands `chunks` (at most [`Pool::threads`]) and returns their expansions in
    /// order. The caller must not hold the visited set's lock.
    pub(super) fn expand(&mut self, mut chunks: Vec<Chunk<M::State>>) -> Vec<Expanded<M::State>> {
        debug_assert!(chunks.len() <= self.threads());
        // The helpers take the first chunks, this thread the last.
        let last = chunks.pop();
        let sent = chunks.len().min(self.workers.len());
        for ((tx, _), chunk) in self.workers.iter().zip(chunks.drain(..)) {
            // A helper that has gone (it panicked) is reported when its answer is read.
            let _ = tx.send(chunk);
        }
        let last = last.map(|chunk| {
            let seen = self.visited.read().unwrap_or_else(|e| e.into_inner());
            self.own.expand(self.model, chunk, &seen)
        });
        let mut out: Vec<_> = self.workers[..sent]
            .iter()
            .map(|(_, rx)| rx.recv().expect("a search thread panicked"))
            .collect();
        out.extend(last);
        out
    }
}
