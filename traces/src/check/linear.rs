//! Linearizability of operations against any [`Spec`]: verdicts from locklab's own
//! search ([`decide`], [`search`]); porcupine-rs ([`check`], [`porcupine`]) for Knossos's
//! mutex and for the partial linearizations its HTML visualization draws. Both drivers
//! search a history's partitions in the same two rounds (`in_two_rounds`).
//!
//! The spec may be nondeterministic (an operation with unknown outcome, a grant whose
//! instant is only known to a window), so the state of a linearized prefix is the *set*
//! of spec states consistent with it ([`StateSet`]).

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::spec::{Spec, Window};
pub use search::{Budget, Exhausted};
use smallvec::SmallVec;

pub mod porcupine;
pub mod search;
pub mod stream;

pub use porcupine::{check, info, ModelOp, SpecModel};

/// One operation as the linearizability checker sees it.
#[derive(Clone, Debug)]
pub struct LinOp<S: Spec> {
    /// The spec (shared; porcupine's model functions take no `self`).
    pub spec: Arc<S>,
    /// What was asked.
    pub input: S::Input,
    /// What was answered (`None`: unknown).
    pub output: Option<S::Output>,
    /// Invocation time.
    pub call: u64,
    /// Completion time (`None`: never, or unknown outcome).
    pub ret: Option<u64>,
    /// The process that invoked it (`c<client>` in descriptions), porcupine's `client_id`:
    /// at most one operation of a client is pending at a time.
    pub client: u32,
    /// The history line of the invocation.
    pub line: usize,
}

impl<S: Spec> LinOp<S> {
    /// The instants at which the operation may have taken effect.
    pub fn window(&self) -> Window {
        Window::between(self.call, self.ret.unwrap_or(u64::MAX))
    }

    /// "c1 acquire(owner 1, lease 2.000s) -> granted (line 4)".
    pub fn describe(&self) -> String {
        format!(
            "c{} {} (line {})",
            self.client,
            S::describe(&self.input, self.output.as_ref()),
            self.line
        )
    }
}

/// The set of spec states consistent with a linearized prefix.
///
/// porcupine-rs clones, hashes and compares the state at every step of its search, so
/// the common case of a single state is its own variant: handling it costs no more than
/// handling the bare state would, where a general collection doubled the cost of a
/// check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateSet<T> {
    /// Nothing linearized yet. porcupine-rs's `init` cannot ask the spec for its initial
    /// state (it takes no `self`), so the first step asks it instead.
    Start,
    /// Exactly one state.
    One(T),
    /// Several states, sorted and without duplicates, so that equal sets compare and
    /// hash equal.
    Many(Box<[T]>),
}

impl<T> StateSet<T> {
    fn from_states(mut states: States<T>) -> Option<Self> {
        match states.len() {
            0 => None,
            1 => states.pop().map(StateSet::One),
            _ => Some(StateSet::Many(states.into_vec().into_boxed_slice())),
        }
    }
}

/// porcupine-rs hashes the state at every step with SipHash, where every `write`
/// counts: the states are folded with a fast hash first and SipHash gets one word.
impl<T: Hash> Hash for StateSet<T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut fx = rustc_hash::FxHasher::default();
        match self {
            StateSet::Start => {}
            StateSet::One(s) => s.hash(&mut fx),
            StateSet::Many(states) => states.hash(&mut fx),
        }
        h.write_u64(fx.finish());
    }
}

/// The states of a [`StateSet`].
pub type States<T> = SmallVec<[T; 1]>;

/// Every state `op` may lead to from any state of `states` (empty: the initial state),
/// given what it answered.
pub fn successors<S: Spec>(states: &[S::State], op: &LinOp<S>) -> States<S::State> {
    let start;
    let states = if states.is_empty() {
        start = [op.spec.init()];
        &start[..]
    } else {
        states
    };
    let at = op.window();
    let mut next = States::new();
    for s in states {
        let outcomes = op.spec.step(s, &op.input, at);
        // An operation of unknown outcome may never have taken effect (Knossos reads an
        // `:info` so). Open to the end, it can always be put last, where any outcome is
        // harmless; but a spec may allow it none there (Knossos's mutex: an acquire that
        // timed out waiting while the mutex stayed held), and then it did not happen.
        if op.output.is_none() && outcomes.is_empty() {
            next.push(s.clone());
        }
        for predicted in outcomes {
            match &op.output {
                None => next.push(predicted.1),
                Some(observed) => {
                    if let Some(n) = op.spec.observe(s, &op.input, at, predicted, observed) {
                        next.push(n);
                    }
                }
            }
        }
    }
    if next.len() > 1 {
        next.sort();
        next.dedup();
    }
    next
}

/// The state set `op` leads to from `set`, or `None` when it contradicts every state.
/// `at` is `op.window()`, computed once by the caller rather than at every step.
fn successor_set<S: Spec>(
    set: &StateSet<S::State>,
    op: &LinOp<S>,
    at: Window,
) -> Option<StateSet<S::State>> {
    let start;
    let one = match set {
        StateSet::Start => {
            start = op.spec.init();
            &start
        }
        StateSet::One(s) => s,
        StateSet::Many(states) => return StateSet::from_states(successors(states, op)),
    };
    // One state and one outcome is nearly every step of a search: taken straight from
    // the spec's answer, without gathering, sorting or copying into a new collection.
    let mut outcomes = op.spec.step(one, &op.input, at);
    if outcomes.len() != 1 {
        return StateSet::from_states(successors(std::slice::from_ref(one), op));
    }
    let predicted = outcomes.pop()?;
    match &op.output {
        None => Some(StateSet::One(predicted.1)),
        Some(observed) => op
            .spec
            .observe(one, &op.input, at, predicted, observed)
            .map(StateSet::One),
    }
}

/// What the linearizability check found.
#[derive(Debug)]
pub enum LinResult<S: Spec> {
    /// Every partition linearizes.
    Ok,
    /// A partition admits no linearization.
    Illegal(Box<Illegal<S>>),
    /// The time or memory budget ran out first.
    Unknown(Exhausted),
}

impl<S: Spec> LinResult<S> {
    /// Why a search gave no answer, for people.
    pub fn why_unknown(e: Exhausted) -> &'static str {
        match e {
            Exhausted::Time => "the search for a linearization ran out of time",
            Exhausted::Memory => "the search for a linearization reached its memory budget",
        }
    }
}

pub(super) use locklab_models::check::resident_bytes;

/// Whether `ops` linearize with every operation of unknown outcome left out. An unknown
/// outcome may be "it never took effect", so an order of the others is an order of
/// all: a yes here is a yes for the partition, found without branching on where each
/// unknown one took effect (hundreds of unanswered tries made a lock history of a
/// client that was never granted take 50 s). A no proves nothing: an unknown operation
/// that did take effect may be what explains the others, so the full search decides.
fn settled_without_unknowns<S: Spec>(ops: &[LinOp<S>], budget: &Budget) -> bool {
    if ops.iter().all(|o| o.output.is_some()) {
        return false;
    }
    let known: Vec<LinOp<S>> = ops.iter().filter(|o| o.output.is_some()).cloned().collect();
    matches!(search::decide(&known, budget), search::Ended::Linearizable)
}

/// The two rounds every driver runs over a history's partitions: a short slice of each
/// first (`first`: `None` to search to the end at once, for a lone partition), so that
/// one hard legal partition does not hide a cheap illegal one behind it (Porcupine's kv
/// history `c50-bad` has a 230-operation key whose search fills gigabytes, and another
/// key illegal at once); then the unsettled ones to the end (or the deadline). `round`
/// searches the open partitions with the given slice.
fn in_two_rounds<T>(
    count: usize,
    first: Option<Duration>,
    deadline: Option<Instant>,
    mut round: impl FnMut(&[usize], Option<Duration>) -> Round<T>,
) -> Result<(), Result<T, Exhausted>> {
    let mut open: Vec<usize> = (0..count).collect();
    for slice in [first, None] {
        if open.is_empty() {
            break;
        }
        if deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(Err(Exhausted::Time));
        }
        match round(&open, slice) {
            Round::Illegal(t) => return Err(Ok(t)),
            Round::Expired(e) => return Err(Err(e)),
            Round::Open(unsettled) => open = unsettled,
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(Err(Exhausted::Time))
    }
}

/// Decides every partition with locklab's own search ([`search::decide`]), one after
/// the other, within one budget: the engine for lock histories, whose refused tries it
/// commits instead of branching on.
pub fn decide<S: Spec>(partitions: &[Vec<LinOp<S>>], budget: &Budget) -> LinResult<S> {
    let first = (partitions.len() > 1).then_some(FIRST_SLICE);
    let decided = in_two_rounds(partitions.len(), first, budget.deadline, |open, slice| {
        let mut unsettled = Vec::new();
        // Smallest first: a machine that stalls through the first round's slices leaves
        // the cheap illegal key unsettled too, and searched after a hard legal one to
        // the end it came only after gigabytes (c50-bad in a fresh clone beside another:
        // the test process was killed at 24 GB).
        let mut order = open.to_vec();
        order.sort_by_key(|&i| partitions[i].len());
        for i in order {
            let ops = &partitions[i];
            let b = match slice {
                Some(s) => Budget {
                    deadline: Some(
                        budget
                            .deadline
                            .map_or(Instant::now() + s, |d| d.min(Instant::now() + s)),
                    ),
                    ..*budget
                },
                None => *budget,
            };
            // Streamed first: an exact answer in the memory of the pending operations,
            // where the search keeps a state for every operation it lifted. Only an
            // illegal partition is searched after it, for its longest order.
            let proven_illegal = match stream::decide(ops, &b) {
                stream::Streamed::Linearizable => continue,
                stream::Streamed::Illegal(at) => Some(at),
                stream::Streamed::Unknown(_) | stream::Streamed::Wide => None,
            };
            if proven_illegal.is_none() && settled_without_unknowns(ops, &b) {
                continue;
            }
            match search::decide(ops, &b) {
                search::Ended::Linearizable => {}
                search::Ended::Illegal(order) => return Round::Illegal((i, Ok(order))),
                search::Ended::OutOfBudget(Exhausted::Time)
                    if slice.is_some() && budget.deadline.is_none_or(|d| Instant::now() < d) =>
                {
                    unsettled.push(i)
                }
                // Proven illegal by the stream: the verdict stands without the order;
                // the explanation names the operation whose return no state could meet.
                search::Ended::OutOfBudget(_) if proven_illegal.is_some() => {
                    return Round::Illegal((i, Err(proven_illegal.unwrap_or_default())))
                }
                search::Ended::OutOfBudget(e) => return Round::Expired(e),
            }
        }
        Round::Open(unsettled)
    });
    match decided {
        Ok(()) => LinResult::Ok,
        Err(Ok((i, Ok(order)))) => {
            LinResult::Illegal(Box::new(explain_with(partitions[i].clone(), order)))
        }
        Err(Ok((i, Err(stuck)))) => LinResult::Illegal(Box::new(Illegal {
            ops: partitions[i].clone(),
            longest: Vec::new(),
            stuck: vec![stuck],
            states_after: States::new(),
            order_known: false,
        })),
        Err(Err(e)) => LinResult::Unknown(e),
    }
}

/// A partition that admits no linearization, with what porcupine-rs learned about it.
#[derive(Debug)]
pub struct Illegal<S: Spec> {
    /// The partition's operations.
    pub ops: Vec<LinOp<S>>,
    /// The longest order of operations (indices into `ops`) that does linearize.
    pub longest: Vec<usize>,
    /// The operations that must come next but cannot: each contradicts every state the
    /// longest prefix leaves.
    pub stuck: Vec<usize>,
    /// The states the longest prefix leaves.
    pub states_after: States<S::State>,
    /// Whether `longest` and `states_after` were searched for. A partition the stream
    /// proved illegal where the search then ran out of budget has neither (only its
    /// stuck operation): no report may redo that search, porcupine-rs's pictures
    /// included, which know no budget.
    pub order_known: bool,
}

fn clamp(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX - 1)
}

/// The number of worker threads: one per core, never more than there is work.
pub fn worker_count(partitions: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(partitions).max(1)
}

/// The time slice each partition gets in the first round.
const FIRST_SLICE: Duration = Duration::from_millis(2);

/// How a round ended.
enum Round<T> {
    /// A partition is illegal (its index, and what the search learned of it).
    Illegal(T),
    /// The deadline passed or the memory budget ran out.
    Expired(Exhausted),
    /// These partitions are still undecided (none was illegal).
    Open(Vec<usize>),
}

/// Finds where `longest`, the longest order of an illegal partition, gets stuck.
fn explain_with<S: Spec>(ops: Vec<LinOp<S>>, longest: Vec<usize>) -> Illegal<S> {
    let mut states: States<S::State> = States::new();
    for &i in &longest {
        states = successors(&states, &ops[i]);
    }
    // The next operation must be one of those not yet linearized that were invoked
    // before the earliest return among them; the ones that fail from here are stuck.
    let done: std::collections::HashSet<usize> = longest.iter().copied().collect();
    let rest: Vec<usize> = (0..ops.len()).filter(|i| !done.contains(i)).collect();
    let horizon = rest
        .iter()
        .map(|&i| ops[i].ret.unwrap_or(u64::MAX))
        .min()
        .unwrap_or(u64::MAX);
    let mut stuck: Vec<usize> = rest
        .iter()
        .copied()
        .filter(|&i| ops[i].call <= horizon && successors(&states, &ops[i]).is_empty())
        .collect();
    if stuck.is_empty() {
        stuck = rest
            .into_iter()
            .filter(|&i| ops[i].ret.unwrap_or(u64::MAX) == horizon)
            .take(1)
            .collect();
    }
    if let (true, Some(first)) = (states.is_empty(), ops.first()) {
        states.push(first.spec.init());
    }
    Illegal {
        ops,
        longest,
        stuck,
        states_after: states,
        order_known: true,
    }
}

#[cfg(test)]
mod tests;
