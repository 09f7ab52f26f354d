//! Linearizability of operations against any [`Spec`]: verdicts from locklab's own
//! search ([`decide`], [`search`]); porcupine-rs ([`check`]) for Knossos's mutex and for
//! the partial linearizations its HTML visualization draws.
//!
//! The spec may be nondeterministic (an operation with unknown outcome, a grant whose
//! instant is only known to a window), so the porcupine state is the *set* of spec
//! states consistent with the operations linearized so far.
//!
//! porcupine-rs 0.3 has three traps handled here: its `*_info_timeout` variants report
//! Illegal when the timeout fires (only the plain variants' verdicts are used), it
//! starts a thread per partition (partitions go through a pool of at most one worker per
//! core), and it panics on a call without a return (an operation that never returned
//! gets a return time after everything).
//!
//! It also has no way to stop a search from outside but its own timeout. The model
//! provides one: once a check's abandon flag is up, every step fails, so the search
//! unwinds at once. An abandoned search's Illegal proves nothing and is discarded; an Ok
//! still stands, since every step of the order it found succeeded.

use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use locklab_models::spec::{Spec, Window};
use porcupine_rs::{CheckResult, LinearizationInfo, Model, Operation};
pub use search::{Budget, Exhausted};
use smallvec::SmallVec;

pub mod search;

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
    /// The client.
    pub client: u32,
    /// The history line of the invocation.
    pub line: usize,
}

impl<S: Spec> LinOp<S> {
    /// The instants at which the operation may have taken effect.
    pub fn window(&self) -> Window {
        Window::between(self.call, self.ret.unwrap_or(u64::MAX))
    }

    /// "c1 acquire(owner 1, lease 10) -> granted (line 4)".
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

/// The porcupine-rs model of a spec.
#[derive(Clone, Debug)]
pub struct SpecModel<S>(PhantomData<S>);

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

/// An operation as porcupine-rs's model sees it.
#[derive(Clone, Debug)]
pub struct ModelOp<S: Spec> {
    op: LinOp<S>,
    at: Window,
    /// The flag that abandons the search (see the module documentation).
    abandon: Option<Arc<AtomicBool>>,
}

impl<S: Spec> Model for SpecModel<S> {
    type State = StateSet<S::State>;
    type Op = ModelOp<S>;
    type Metadata = ();

    fn init() -> Self::State {
        StateSet::Start
    }

    fn step(state: &Self::State, op: &Self::Op) -> (bool, Self::State) {
        // porcupine-rs discards the state of a rejected step.
        if op
            .abandon
            .as_ref()
            .is_some_and(|a| a.load(Ordering::Relaxed))
        {
            return (false, StateSet::Start);
        }
        match successor_set(state, &op.op, op.at) {
            Some(next) => (true, next),
            None => (false, StateSet::Start),
        }
    }

    fn describe_operation(op: &Self::Op) -> String {
        S::describe(&op.op.input, op.op.output.as_ref())
    }

    /// Escaped: porcupine-rs shows state descriptions through `innerHTML`.
    fn describe_state(state: &Self::State) -> String {
        crate::escape::escape(&match state {
            StateSet::Start => "initial".to_string(),
            StateSet::One(one) => format!("{one:?}"),
            StateSet::Many(many) => format!("one of {many:?}"),
        })
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
        for &i in open {
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
            if settled_without_unknowns(ops, &b) {
                continue;
            }
            match search::decide(ops, &b) {
                search::Ended::Linearizable => {}
                search::Ended::Illegal(order) => return Round::Illegal((i, order)),
                search::Ended::OutOfBudget(Exhausted::Time)
                    if slice.is_some() && budget.deadline.is_none_or(|d| Instant::now() < d) =>
                {
                    unsettled.push(i)
                }
                search::Ended::OutOfBudget(e) => return Round::Expired(e),
            }
        }
        Round::Open(unsettled)
    });
    match decided {
        Ok(()) => LinResult::Ok,
        Err(Ok((i, order))) => {
            LinResult::Illegal(Box::new(explain_with(partitions[i].clone(), order)))
        }
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
}

fn to_porcupine<S: Spec>(
    ops: &[LinOp<S>],
    abandon: Option<&Arc<AtomicBool>>,
) -> Vec<Operation<SpecModel<S>>> {
    ops.iter()
        .map(|op| Operation {
            client_id: Some(op.client),
            call_time: clamp(op.call),
            return_time: op.ret.map_or(i64::MAX, clamp),
            op: ModelOp {
                op: op.clone(),
                at: op.window(),
                abandon: abandon.cloned(),
            },
            metadata: None,
        })
        .collect()
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

/// Checks every partition; stops at the first illegal one.
///
/// One expensive but linearizable partition must not hide a cheap illegal one
/// (Porcupine's kv c50-bad is such a history: searched in order, it takes seconds). So
/// partitions are searched in two rounds, at most one per core at a time: a short slice
/// each, then the unsettled ones to the end. An illegal partition ends the check in
/// either round, abandoning the searches still running.
pub fn check<S: Spec>(partitions: &[Vec<LinOp<S>>], budget: &Budget) -> LinResult<S> {
    let deadline = budget.deadline;
    if let ([only], None, usize::MAX) = (partitions, deadline, budget.max_bytes) {
        // Nothing to race against or to stop: porcupine-rs's plain search on this thread.
        return if porcupine_rs::check_operations(&to_porcupine(only, None)) {
            LinResult::Ok
        } else {
            LinResult::Illegal(Box::new(explain(only.clone())))
        };
    }
    let abandon = Arc::new(AtomicBool::new(false));
    let converted: Vec<Vec<Operation<SpecModel<S>>>> = partitions
        .iter()
        .map(|p| to_porcupine(p, Some(&abandon)))
        .collect();
    // Round one settles the cheap partitions and catches the cheap illegal ones; round
    // two searches the rest without starting again, so no search is repeated beyond its
    // first slice.
    match in_two_rounds(
        converted.len(),
        Some(FIRST_SLICE),
        deadline,
        |open, slice| round(&converted, open, slice, budget, &abandon),
    ) {
        Ok(()) => LinResult::Ok,
        Err(Ok(i)) => LinResult::Illegal(Box::new(explain(partitions[i].clone()))),
        Err(Err(e)) => LinResult::Unknown(e),
    }
}

/// How a round ended.
enum Round<T> {
    /// A partition is illegal (its index, and what the search learned of it).
    Illegal(T),
    /// The deadline passed or the memory budget ran out.
    Expired(Exhausted),
    /// These partitions are still undecided (none was illegal).
    Open(Vec<usize>),
}

/// One round: every open partition searched by a pool of one worker per core, for at
/// most `slice` each if given (with porcupine-rs's timeout), otherwise to the end on the
/// worker's own thread (stopped by `abandon` when another partition proves illegal or the
/// deadline passes).
fn round<M: Model>(
    converted: &[Vec<Operation<M>>],
    open: &[usize],
    slice: Option<Duration>,
    budget: &Budget,
    abandon: &AtomicBool,
) -> Round<usize> {
    let deadline = budget.deadline;
    let exhausted: Mutex<Option<Exhausted>> = Mutex::new(None);
    // porcupine-rs's cache cannot be measured from outside, so the budget holds the
    // growth of the whole process while the search runs.
    let rss_start = resident_bytes().unwrap_or(0);
    let next = AtomicUsize::new(0);
    let illegal: Mutex<Option<usize>> = Mutex::new(None);
    let unsettled: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let workers = worker_count(open.len());
    let running = (Mutex::new(workers), Condvar::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let _done = Done(&running);
                loop {
                    if abandon.load(Ordering::Relaxed) {
                        return;
                    }
                    let Some(&i) = open.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let budget = match (slice, deadline) {
                        (Some(s), Some(d)) => {
                            Some(s.min(d.saturating_duration_since(Instant::now())))
                        }
                        (s, _) => s,
                    };
                    // The plain variants: an Illegal is a proof (unless the search was
                    // abandoned), a timeout is Unknown.
                    let verdict = match budget {
                        Some(b) => porcupine_rs::check_operations_timeout(&converted[i], b),
                        None if porcupine_rs::check_operations(&converted[i]) => CheckResult::Ok,
                        None => CheckResult::Illegal,
                    };
                    match verdict {
                        CheckResult::Ok => {}
                        CheckResult::Unknown => {
                            unsettled.lock().unwrap_or_else(|p| p.into_inner()).push(i)
                        }
                        // The flag was down until now, so it was down for the whole search:
                        // this Illegal is genuine, and the first one claims the check.
                        CheckResult::Illegal => {
                            if !abandon.swap(true, Ordering::Relaxed) {
                                *illegal.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
                            }
                        }
                    }
                }
            });
        }
        // A search to the end has no timeout of its own: this thread keeps the deadline
        // and watches the memory, waking every few milliseconds.
        if slice.is_none() && (deadline.is_some() || budget.max_bytes != usize::MAX) {
            let (count, all_done) = &running;
            let mut guard = count.lock().unwrap_or_else(|p| p.into_inner());
            while *guard > 0 {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    *exhausted.lock().unwrap_or_else(|p| p.into_inner()) = Some(Exhausted::Time);
                    abandon.store(true, Ordering::Relaxed);
                    break;
                }
                let grown = resident_bytes().unwrap_or(0).saturating_sub(rss_start);
                if grown > budget.max_bytes {
                    *exhausted.lock().unwrap_or_else(|p| p.into_inner()) = Some(Exhausted::Memory);
                    abandon.store(true, Ordering::Relaxed);
                    break;
                }
                let mut wait = Duration::from_millis(20);
                if let Some(d) = deadline {
                    wait = wait.min(d.saturating_duration_since(now));
                }
                guard = all_done
                    .wait_timeout(guard, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        }
    });
    if let Some(i) = illegal.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Round::Illegal(i);
    }
    if abandon.load(Ordering::Relaxed) {
        let why = exhausted.into_inner().unwrap_or_else(|p| p.into_inner());
        return Round::Expired(why.unwrap_or(Exhausted::Time));
    }
    let mut rest = unsettled.into_inner().unwrap_or_else(|p| p.into_inner());
    rest.sort_unstable();
    Round::Open(rest)
}

/// Counts a worker out when it ends, however it ends.
struct Done<'a>(&'a (Mutex<usize>, Condvar));

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let (count, all_done) = self.0;
        *count.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        all_done.notify_all();
    }
}

/// Finds the longest order of an illegal partition (its verdict already established by
/// porcupine-rs's plain search) and where it gets stuck.
fn explain<S: Spec>(ops: Vec<LinOp<S>>) -> Illegal<S> {
    let longest = search::longest(&ops).unwrap_or_else(|| {
        // Our search found an order after all, which only a difference from
        // porcupine-rs's search could cause: take the longest order from porcupine-rs.
        let (_, info) = porcupine_rs::check_operations_info(&to_porcupine(&ops, None));
        info.partial_linearizations
            .first()
            .and_then(|seqs| seqs.iter().max_by_key(|s| s.len()).cloned())
            .unwrap_or_default()
    });
    explain_with(ops, longest)
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
    }
}

/// porcupine-rs's partial linearizations of every partition, for the HTML report.
pub fn info<S: Spec>(partitions: &[Vec<LinOp<S>>]) -> LinearizationInfo<SpecModel<S>> {
    let mut all = LinearizationInfo::<SpecModel<S>>::empty();
    for p in partitions {
        let (_, one) = porcupine_rs::check_operations_info(&to_porcupine(p, None));
        all.partial_linearizations
            .extend(one.partial_linearizations);
        all.partition_ops.extend(one.partition_ops);
    }
    all
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use locklab_models::spec::{RegisterInput, RegisterOutput, RegisterSpec};

    use super::{check, round, to_porcupine, Budget, LinOp, LinResult, Round};

    fn op(
        input: RegisterInput,
        output: RegisterOutput,
        call: u64,
        ret: u64,
    ) -> LinOp<RegisterSpec> {
        LinOp {
            spec: Arc::new(RegisterSpec::default()),
            input,
            output: Some(output),
            call,
            ret: Some(ret),
            client: call as u32,
            line: call as usize,
        }
    }

    /// Linearizable, but not in any time a test can wait: 24 overlapping writes, then a
    /// read of the first one. porcupine-rs tries that write first and searches every
    /// order of the others behind it before it puts the write last.
    fn endless() -> Vec<LinOp<RegisterSpec>> {
        let mut ops: Vec<_> = (0..24)
            .map(|v| {
                op(
                    RegisterInput::Write(v),
                    RegisterOutput::Written,
                    v as u64,
                    100,
                )
            })
            .collect();
        ops.push(op(
            RegisterInput::Read,
            RegisterOutput::Value(Some(0)),
            200,
            201,
        ));
        ops
    }

    /// Illegal at once: a read of a value never written.
    fn illegal() -> Vec<LinOp<RegisterSpec>> {
        vec![op(
            RegisterInput::Read,
            RegisterOutput::Value(Some(7)),
            1,
            2,
        )]
    }

    #[test]
    fn a_deadline_abandons_a_running_search_and_gives_unknown() {
        let start = Instant::now();
        let budget = Budget {
            deadline: Some(Instant::now() + Duration::from_millis(50)),
            max_bytes: usize::MAX,
        };
        let result = check(&[endless()], &budget);
        assert!(matches!(result, LinResult::Unknown(_)), "{result:?}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }

    /// porcupine-rs's cache cannot be measured, so the budget watches the process: a
    /// search whose cache grows past it is abandoned with "unknown", not left to take
    /// the machine down.
    #[test]
    fn a_memory_budget_abandons_a_growing_search_and_gives_unknown() {
        let budget = Budget {
            deadline: Some(Instant::now() + Duration::from_secs(120)),
            max_bytes: 8 << 20,
        };
        let result = check(&[endless()], &budget);
        assert!(
            matches!(result, LinResult::Unknown(super::Exhausted::Memory)),
            "{result:?}"
        );
    }

    #[test]
    fn an_illegal_partition_abandons_the_search_running_beside_it() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            // One worker searches the endless partition first and never gets further.
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        // On its own thread, so that a search that cannot be stopped fails the test
        // instead of hanging it.
        std::thread::spawn(move || {
            let abandon = Arc::new(AtomicBool::new(false));
            let converted = [
                to_porcupine(&endless(), Some(&abandon)),
                to_porcupine(&illegal(), Some(&abandon)),
            ];
            // Round two's search to the end, as if both had outlived their first slice.
            let ended = round(&converted, &[0, 1], None, &Budget::unlimited(), &abandon);
            let _ = tx.send(matches!(ended, Round::Illegal(1)));
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok(true));
    }

    #[test]
    fn an_illegal_partition_is_found_beside_an_endless_one() {
        let start = Instant::now();
        match check(&[endless(), illegal()], &Budget::unlimited()) {
            LinResult::Illegal(ill) => assert_eq!(ill.ops.len(), 1),
            other => panic!("{other:?}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }
}
