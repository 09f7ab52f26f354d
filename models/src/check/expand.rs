//! Successor generation for the search, split across threads.
//!
//! Expanding a state (its successors, their canonical encodings and fingerprints) is
//! pure and takes most of a search's time; deciding which successors are new is not,
//! and decides which path is the shortest. So [`super::bfs`] hands each batch of queued
//! states to the threads of a [`Pool`] in contiguous pieces and merges the results on
//! its own thread in queue order: the visited set sees exactly the sequence a
//! one-threaded search would, and finds the same states, parents and stories.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;

use stateright::Model;

use super::encode::fingerprint;
use super::{Narrate, NextInto};

/// The successors of a piece of the queue, in order.
pub(super) struct Expanded<S> {
    /// Each successor with the fingerprint of its canonical encoding.
    pub(super) successors: Vec<([u64; 2], S)>,
    /// `ends[i]`: one past the last successor of the piece's `i`-th state.
    pub(super) ends: Vec<usize>,
}

/// Reused buffers of one thread.
struct Expander<M: Model> {
    actions: Vec<M::Action>,
    next: Vec<M::State>,
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
            next: Vec::new(),
            encoding: Vec::new(),
        }
    }

    fn expand(&mut self, model: &M, states: Vec<M::State>) -> Expanded<M::State> {
        let mut out = Expanded {
            successors: Vec::with_capacity(states.len() * 4),
            ends: Vec::with_capacity(states.len()),
        };
        for state in states {
            model.next_states_into(&state, &mut self.actions, &mut self.next);
            drop(state);
            for s in self.next.drain(..) {
                self.encoding.clear();
                model.encode_canonical(&s, &mut self.encoding);
                out.successors.push((fingerprint(&self.encoding), s));
            }
            out.ends.push(out.successors.len());
        }
        out
    }
}

/// One helper thread: pieces in, their successors out, in the order sent.
type Worker<S> = (Sender<Vec<S>>, Receiver<Expanded<S>>);

/// The search's own thread plus `threads - 1` helpers, alive for one search (so each
/// keeps its thread-local caches, such as the Redis model's shared nodes).
pub(super) struct Pool<'m, M: Model> {
    model: &'m M,
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
    pub(super) fn start<'s>(scope: &'s Scope<'s, '_>, model: &'m M, threads: usize) -> Self
    where
        'm: 's,
    {
        let workers = (1..threads.max(1))
            .map(|_| {
                let (job_tx, job_rx) = channel::<Vec<M::State>>();
                let (out_tx, out_rx) = channel();
                scope.spawn(move || {
                    let mut expander = Expander::new();
                    for job in job_rx {
                        if out_tx.send(expander.expand(model, job)).is_err() {
                            break;
                        }
                    }
                });
                (job_tx, out_rx)
            })
            .collect();
        Pool {
            model,
            own: Expander::new(),
            workers,
        }
    }

    /// How many threads expand.
    pub(super) fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Expands `states` and returns one [`Expanded`] per piece, in the states' order.
    pub(super) fn expand(&mut self, mut states: Vec<M::State>) -> Vec<Expanded<M::State>> {
        let piece = states.len().div_ceil(self.threads()).max(1);
        // The helpers take the first pieces, this thread the last.
        let mut sent = 0;
        for (tx, _) in &self.workers {
            if states.len() <= piece {
                break;
            }
            let rest = states.split_off(piece);
            let first = std::mem::replace(&mut states, rest);
            // A helper that has gone (it panicked) is reported when its answer is read.
            let _ = tx.send(first);
            sent += 1;
        }
        let last = self.own.expand(self.model, states);
        let mut out: Vec<_> = self.workers[..sent]
            .iter()
            .map(|(_, rx)| rx.recv().expect("a search thread panicked"))
            .collect();
        out.push(last);
        out
    }
}
