//! Specifications: pure sequential state machines, one per lock service or resource.
//!
//! A spec answers "what may this operation return, and what state follows, if it takes
//! effect at some instant in `at`?". Models call it with an exact instant and branch on
//! every outcome; the history checker calls it with the window between an operation's
//! invocation and its completion and keeps every state that matches what was observed.
//! Writing time as a window is what lets one spec serve both without a second copy of
//! the semantics.

use std::fmt::Debug;
use std::hash::Hash;

pub mod expiry;
pub mod inventory;
pub mod kv;
pub mod lock;
pub mod mutex;
pub mod register;
mod window;

pub use inventory::{InventoryInput, InventoryOutput, InventorySpec, InventoryState};
pub use kv::{KvInput, KvOutput, KvSpec};
pub use lock::{Hold, LockInput, LockOutput, LockSpec, LockState, Owner};
pub use mutex::{MutexInput, MutexOutput, MutexSpec};
pub use register::{RegisterInput, RegisterOutput, RegisterSpec};
pub use window::{fmt_time, maybe_expired, maybe_live, Window};

/// The outcomes of one step: almost always one, at most a few, so kept inline (the
/// history checker calls `step` millions of times).
pub type Outcomes<O, S> = smallvec::SmallVec<[(O, S); 2]>;

pub use smallvec::smallvec as outcomes;

/// A sequential specification.
///
/// `step` lists every outcome an input may have; a deterministic spec returns exactly one
/// when `at` is a single instant. The checker treats the spec as nondeterministic: it
/// keeps the set of states consistent with what was observed.
pub trait Spec: Clone + Debug + Send + Sync + 'static {
    /// The state of the service or resource.
    type State: Clone + Debug + Eq + Ord + Hash + Send + Sync;
    /// What a client asks.
    type Input: Clone + Debug + PartialEq + Send + Sync;
    /// What the service answers.
    type Output: Clone + Debug + Eq + Send + Sync;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Every `(output, next state)` the input may produce when it takes effect at an
    /// instant of `at`.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        at: Window,
    ) -> Outcomes<Self::Output, Self::State>;

    /// The state that follows when the service answered `observed` to `input`, taking
    /// effect at an instant of `at`, where the spec predicted `predicted`; or `None` when
    /// the answer contradicts the spec. The default demands equality; a spec whose
    /// answers carry values the service is free to choose (a fencing token only has to
    /// be larger), or values that depend on the very instant (a remaining lease), refines
    /// it.
    fn observe(
        &self,
        _before: &Self::State,
        _input: &Self::Input,
        _at: Window,
        predicted: (Self::Output, Self::State),
        observed: &Self::Output,
    ) -> Option<Self::State> {
        (predicted.0 == *observed).then_some(predicted.1)
    }

    /// Whether an operation that answered `output` leaves the state exactly as it found
    /// it, whatever the state (a read, a refused try). The history checker may then
    /// linearize it as soon as it fits, without trying it anywhere else; answering
    /// `true` for an operation that can change the state would make it miss orders.
    fn read_only(&self, _input: &Self::Input, _output: &Self::Output) -> bool {
        false
    }

    /// A short human description of an operation, for reports.
    fn describe(input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(o) => format!("{input:?} -> {o:?}"),
            None => format!("{input:?} -> ?"),
        }
    }

    /// A short human description of a state, for reports: what a reader of the
    /// history would call it (`empty`, `3`), not Rust's spelling of it (`Some(3)`).
    fn describe_state(state: &Self::State) -> String {
        format!("{state:?}")
    }

    /// A set of possible states, for reports: the one state, or `one of a, b`.
    fn describe_states(states: &[Self::State]) -> String {
        match states {
            [one] => Self::describe_state(one),
            many => format!(
                "one of {}",
                many.iter()
                    .map(Self::describe_state)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Runs a spec over a sequence of `(input, instant)` pairs, taking the first outcome of
/// each step: the reference behaviour for deterministic specs.
pub fn run_sequential<S: Spec>(spec: &S, ops: &[(S::Input, u64)]) -> Vec<S::Output> {
    let mut state = spec.init();
    let mut outputs = Vec::with_capacity(ops.len());
    for (input, t) in ops {
        let Some((out, next)) = spec.step(&state, input, Window::at(*t)).into_iter().next() else {
            break;
        };
        outputs.push(out);
        state = next;
    }
    outputs
}
