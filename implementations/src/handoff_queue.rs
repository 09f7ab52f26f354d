//! The local hand-off queue of one lock key: tasks of one process line up here, so that
//! only one of them at a time deals with the server for the key — the *local owner*,
//! which is either trying to get the key or holding it — and the others wait for it to
//! pass the key on (one server command, see `redis::cas_held`) instead of racing for it
//! with `SET NX`.
//!
//! The queue only decides *who is next*; the server decides whether a hand-off
//! happened. The races, each settled under this module's mutexes:
//!
//! - a task arriving ([`HandOffQueue::claim`]) and the local owner leaving
//!   ([`HandOffQueue::next_owner`], [`HandOffQueue::give_up`]): the task queues only
//!   while an owner is on record, and a leaving owner either picks the first queued
//!   task or clears the record, so a task is never left queued behind nobody, and there
//!   is never more than one owner on record;
//! - a waiter giving up ([`Ticket::withdraw`], or dropping its [`Ticket`]) and the owner
//!   picking it: once picked, the waiter cannot withdraw and must wait for the outcome,
//!   which the owner always delivers (a [`Handing`] dropped undelivered delivers
//!   [`HandOff::Retry`]);
//! - the outcome arriving after the waiter is gone: a grant is then handed back to the
//!   caller ([`Handing::deliver`] returns it) or dropped with the ticket, and the grant's
//!   own `Drop` releases it. A grant is never lost in the queue.
//!
//! `src/loom_tests.rs` model-checks these races under `--cfg loom`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::sync::{Arc, Mutex};

/// What a picked waiter gets.
#[derive(Debug)]
pub enum HandOff<T> {
    /// The key is now the waiter's: the grant.
    Granted(T),
    /// The waiter is the local owner now but holds nothing: the previous owner gave up
    /// waiting, or its hand-off did not happen. Ask the server.
    Retry,
}

/// The waiters of one key behind its local holder. `W` is what the holder needs to know
/// about a waiter to hand it the key, `T` the grant it hands over.
pub struct HandOffQueue<W, T> {
    /// Shared with the tickets and hand-offs it gives out.
    inner: Arc<Mutex<Inner<W, T>>>,
}

struct Inner<W, T> {
    /// The local owner on record: set by the first claim (or by a grant), moved by a
    /// hand-off or a give-up, cleared when it leaves with nobody queued.
    holder: Option<String>,
    waiters: VecDeque<Queued<W, T>>,
    next_id: u64,
}

struct Queued<W, T> {
    id: u64,
    owner: String,
    waiter: W,
    slot: Arc<Slot<T>>,
}

struct Slot<T> {
    state: Mutex<SlotState<T>>,
}

struct SlotState<T> {
    stage: Stage<T>,
    waker: Option<Waker>,
}

enum Stage<T> {
    /// In the queue.
    Queued,
    /// Picked by the holder; the outcome is on its way.
    Picked,
    /// The outcome, not yet taken.
    Ready(HandOff<T>),
    /// Taken, withdrawn, or the waiter is gone.
    Closed,
}

fn lock<X>(m: &Mutex<X>) -> crate::sync::MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<W, T> Default for HandOffQueue<W, T> {
    fn default() -> Self {
        HandOffQueue {
            inner: Arc::new(Mutex::new(Inner {
                holder: None,
                waiters: VecDeque::new(),
                next_id: 0,
            })),
        }
    }
}

impl<W, T> std::fmt::Debug for HandOffQueue<W, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = lock(&self.inner);
        f.debug_struct("HandOffQueue")
            .field("holder", &inner.holder)
            .field("waiters", &inner.waiters.len())
            .finish()
    }
}

impl<W, T> HandOffQueue<W, T> {
    /// An empty queue with no local holder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A local handle with identity `owner` was granted the key by the server: it is
    /// the local owner now (even if the record named another, which then had lost it).
    pub fn held_by(&self, owner: &str) {
        lock(&self.inner).holder = Some(owner.to_string());
    }

    /// The local owner on record, if any.
    pub fn holder(&self) -> Option<String> {
        lock(&self.inner).holder.clone()
    }

    /// Waiters in the queue (picked ones excluded).
    pub fn len(&self) -> usize {
        lock(&self.inner).waiters.len()
    }

    /// Whether nobody is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `owner` wants the key. `None`: it is the local owner (it was already, or nobody
    /// was and now it is) and must ask the server. Otherwise it queues behind the local
    /// owner and waits with the returned ticket.
    pub fn claim(&self, owner: &str, waiter: W) -> Option<Ticket<W, T>> {
        let mut inner = lock(&self.inner);
        match inner.holder.as_deref() {
            None => {
                inner.holder = Some(owner.to_string());
                return None;
            }
            Some(h) if h == owner => return None,
            Some(_) => {}
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                stage: Stage::Queued,
                waker: None,
            }),
        });
        inner.waiters.push_back(Queued {
            id,
            owner: owner.to_string(),
            waiter,
            slot: slot.clone(),
        });
        Some(Ticket {
            queue: self.share(),
            id,
            owner: owner.to_string(),
            slot,
        })
    }

    /// The local owner `owner` is releasing the key it holds: the first queued waiter,
    /// picked (it is the owner on record from now on), or `None` when nobody waits —
    /// then the record is cleared and the caller frees the key on the server. Someone
    /// not on record (its lease ran out and another handle took the key) picks nobody
    /// and leaves the record alone.
    pub fn next_owner(&self, owner: &str) -> Option<(Handing<W, T>, W)> {
        let next = self.pick(owner)?;
        Some((
            Handing {
                queue: self.share(),
                owner: next.owner,
                slot: Some(next.slot),
            },
            next.waiter,
        ))
    }

    /// The local owner `owner` stops trying (its wait ran out, or it failed, or its
    /// acquire was dropped) without holding the key: the first queued waiter becomes
    /// the owner and asks the server itself.
    pub fn give_up(&self, owner: &str) {
        let mut leaving = owner.to_string();
        // A picked waiter that has gone leaves in turn.
        while let Some(next) = self.pick(&leaving) {
            match put(&next.slot, HandOff::Retry) {
                Put::Delivered => return,
                Put::Gone(_) => leaving = next.owner,
            }
        }
    }

    fn share(&self) -> HandOffQueue<W, T> {
        HandOffQueue {
            inner: self.inner.clone(),
        }
    }

    fn pick(&self, owner: &str) -> Option<Queued<W, T>> {
        let mut inner = lock(&self.inner);
        if inner.holder.as_deref() != Some(owner) {
            return None;
        }
        let Some(next) = inner.waiters.pop_front() else {
            inner.holder = None;
            return None;
        };
        lock(&next.slot.state).stage = Stage::Picked;
        inner.holder = Some(next.owner.clone());
        Some(next)
    }
}

/// The owner's side of a picked waiter: deliver the outcome exactly once.
pub struct Handing<W, T> {
    queue: HandOffQueue<W, T>,
    owner: String,
    slot: Option<Arc<Slot<T>>>,
}

impl<W, T> Handing<W, T> {
    /// Delivers the outcome. `Err(grant)`: the waiter is gone, and the caller owns the
    /// grant again (dropping it releases it, which passes it on). A `Retry` for a
    /// waiter that is gone makes the next one the owner.
    pub fn deliver(mut self, outcome: HandOff<T>) -> Result<(), T> {
        let Some(slot) = self.slot.take() else {
            return Ok(());
        };
        match put(&slot, outcome) {
            Put::Delivered => Ok(()),
            Put::Gone(HandOff::Granted(t)) => Err(t),
            Put::Gone(HandOff::Retry) => {
                self.queue.give_up(&self.owner);
                Ok(())
            }
        }
    }
}

enum Put<T> {
    Delivered,
    /// The waiter is gone; the outcome comes back.
    Gone(HandOff<T>),
}

fn put<T>(slot: &Slot<T>, outcome: HandOff<T>) -> Put<T> {
    let mut state = lock(&slot.state);
    if matches!(state.stage, Stage::Closed) {
        return Put::Gone(outcome);
    }
    state.stage = Stage::Ready(outcome);
    if let Some(w) = state.waker.take() {
        w.wake();
    }
    Put::Delivered
}

impl<W, T> Drop for Handing<W, T> {
    /// An owner that never got to deliver (its release was cancelled mid-way) must not
    /// leave the waiter hanging: it retries on the server, where the lease settles
    /// whatever the interrupted command did.
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            if let Put::Gone(_) = put(&slot, HandOff::Retry) {
                self.queue.give_up(&self.owner);
            }
        }
    }
}

/// The waiter's place in the queue.
pub struct Ticket<W, T> {
    queue: HandOffQueue<W, T>,
    id: u64,
    owner: String,
    slot: Arc<Slot<T>>,
}

impl<W, T> Ticket<W, T> {
    /// Leaves the queue if still in it (`Ok`). `Err(self)`: already picked — the
    /// outcome is on its way and must be awaited with [`Ticket::turn`].
    pub fn withdraw(self) -> Result<(), Self> {
        let mut inner = lock(&self.queue.inner);
        let mut state = lock(&self.slot.state);
        if matches!(state.stage, Stage::Queued) {
            inner.waiters.retain(|q| q.id != self.id);
            state.stage = Stage::Closed;
            return Ok(());
        }
        drop(state);
        drop(inner);
        Err(self)
    }

    /// The outcome, once the holder delivered it.
    pub fn turn(&self) -> Turn<'_, T> {
        Turn { slot: &self.slot }
    }
}

impl<W, T> Drop for Ticket<W, T> {
    /// A waiter that goes away (its acquire was cancelled) leaves the queue; a grant
    /// that reached it too late is dropped here, which releases it; a turn to ask the
    /// server that reached it too late goes to the next waiter.
    fn drop(&mut self) {
        let late = {
            let mut inner = lock(&self.queue.inner);
            let mut state = lock(&self.slot.state);
            if matches!(state.stage, Stage::Queued) {
                inner.waiters.retain(|q| q.id != self.id);
            }
            std::mem::replace(&mut state.stage, Stage::Closed)
        };
        if let Stage::Ready(HandOff::Retry) = late {
            self.queue.give_up(&self.owner);
        }
    }
}

/// Resolves to the outcome delivered to a ticket.
pub struct Turn<'a, T> {
    slot: &'a Slot<T>,
}

impl<T> Future for Turn<'_, T> {
    type Output = HandOff<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HandOff<T>> {
        let mut state = lock(&self.slot.state);
        match std::mem::replace(&mut state.stage, Stage::Closed) {
            Stage::Ready(outcome) => Poll::Ready(outcome),
            // Taken already: a second poll after completion.
            Stage::Closed => Poll::Ready(HandOff::Retry),
            waiting => {
                state.stage = waiting;
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
