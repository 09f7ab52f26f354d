//! Linearizability of operations against any [`Spec`], with porcupine-rs.
//!
//! The spec may be nondeterministic (an operation with unknown outcome, a grant whose
//! instant is only known to a window), so the porcupine state is the *set* of spec
//! states consistent with the operations linearized so far.
//!
//! porcupine-rs 0.3 has three traps handled here: its `*_info_timeout` variants report
//! Illegal when the timeout fires (only the plain timeout variant's verdict is used),
//! it starts a thread per partition (partitions go through a pool of at most one
//! worker per core), and it panics on a call without a return (an operation that never
//! returned gets a return time after everything).

use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use locklab_models::spec::{Spec, Window};
use porcupine_rs::{CheckResult, LinearizationInfo, Model, Operation};
use smallvec::SmallVec;

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

/// The set of spec states consistent with a linearized prefix (empty: not started).
/// Almost always a single state, kept inline: porcupine-rs clones and caches a state
/// at every step, and a heap allocation each time doubled the cost of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateSet<T>(pub States<T>);

/// porcupine-rs hashes the state at every step with SipHash, where every `write`
/// counts: the states are folded with a fast hash first and SipHash gets one word.
impl<T: Hash> Hash for StateSet<T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut fx = rustc_hash::FxHasher::default();
        for s in &self.0 {
            s.hash(&mut fx);
        }
        h.write_u64(fx.finish());
    }
}

/// The states of a [`StateSet`].
pub type States<T> = SmallVec<[T; 1]>;

/// The porcupine-rs model of a spec.
#[derive(Clone, Debug)]
pub struct SpecModel<S>(PhantomData<S>);

/// Every state `op` may lead to from any state of `states`, given what it answered.
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
        for predicted in op.spec.step(s, &op.input, at) {
            match &op.output {
                None => next.push(predicted.1),
                Some(observed) => {
                    if let Some(n) = op.spec.observe(s, predicted, observed) {
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

impl<S: Spec> Model for SpecModel<S> {
    type State = StateSet<S::State>;
    type Op = LinOp<S>;
    type Metadata = ();

    fn init() -> Self::State {
        StateSet(States::new())
    }

    fn step(state: &Self::State, op: &Self::Op) -> (bool, Self::State) {
        let next = successors(&state.0, op);
        (!next.is_empty(), StateSet(next))
    }

    fn describe_operation(op: &Self::Op) -> String {
        S::describe(&op.input, op.output.as_ref())
    }

    /// Escaped: porcupine-rs shows state descriptions through `innerHTML`.
    fn describe_state(state: &Self::State) -> String {
        crate::html::escape(&match state.0.as_slice() {
            [] => "initial".to_string(),
            [one] => format!("{one:?}"),
            many => format!("one of {many:?}"),
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
    /// The time ran out first.
    Unknown,
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
    /// porcupine-rs's partial linearizations, for the HTML report.
    pub info: LinearizationInfo<SpecModel<S>>,
}

fn to_porcupine<S: Spec>(ops: &[LinOp<S>]) -> Vec<Operation<SpecModel<S>>> {
    ops.iter()
        .map(|op| Operation {
            client_id: Some(op.client),
            call_time: clamp(op.call),
            return_time: op.ret.map_or(i64::MAX, clamp),
            op: op.clone(),
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

/// The time slice each partition gets in the first round; every later round gives the
/// partitions still unsettled four times as long.
const FIRST_SLICE: Duration = Duration::from_millis(2);
/// How much longer each round's slice is than the last.
const SLICE_GROWTH: u32 = 4;

/// Checks every partition; stops at the first illegal one.
///
/// porcupine-rs can only stop a search by its own timeout, and one expensive but
/// linearizable partition must not hide a cheap illegal one (Porcupine's kv c50-bad is
/// such a history: searched to the end in order, it took minutes and 20 GB in a test
/// build on a loaded machine). So partitions are searched in rounds, at most one per
/// core at a time, each round with a slice four times the last: a partition is settled
/// in the first round whose slice suffices, and an illegal one ends the check in
/// whichever round it is found. Searches cut by a slice start again in the next round,
/// which costs at most a third more than the last round alone.
pub fn check<S: Spec>(partitions: &[Vec<LinOp<S>>], timeout: Option<Duration>) -> LinResult<S> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let converted: Vec<Vec<Operation<SpecModel<S>>>> =
        partitions.iter().map(|p| to_porcupine(p)).collect();
    if converted.len() == 1 && deadline.is_none() {
        // Nothing to race against and no timeout to misreport: one unbounded search that
        // also collects the partial linearizations, so an illegal history is not searched
        // twice.
        let (verdict, info) = porcupine_rs::check_operations_info(&converted[0]);
        return match verdict {
            CheckResult::Illegal => {
                LinResult::Illegal(Box::new(explain_with(partitions[0].clone(), info)))
            }
            _ => LinResult::Ok,
        };
    }
    let mut open: Vec<usize> = (0..converted.len()).collect();
    let mut slice = FIRST_SLICE;
    while !open.is_empty() {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return LinResult::Unknown;
        }
        let budget = left.map_or(slice, |l| slice.min(l));
        let (illegal, unsettled) = round(&converted, &open, Some(budget));
        if let Some(i) = illegal {
            return LinResult::Illegal(Box::new(explain(partitions[i].clone(), &converted[i])));
        }
        open = unsettled;
        slice = slice.saturating_mul(SLICE_GROWTH);
    }
    LinResult::Ok
}

/// One round: every open partition searched for at most `budget`, by a pool of one
/// worker per core. Returns the first illegal partition, or those still unsettled.
fn round<M: Model>(
    converted: &[Vec<Operation<M>>],
    open: &[usize],
    budget: Option<Duration>,
) -> (Option<usize>, Vec<usize>) {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let illegal: Mutex<Option<usize>> = Mutex::new(None);
    let unsettled: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..worker_count(open.len()) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Some(&i) = open.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                // The plain variants: an Illegal is a proof, a timeout is Unknown.
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
                    CheckResult::Illegal => {
                        let mut first = illegal.lock().unwrap_or_else(|p| p.into_inner());
                        if first.is_none_or(|f| i < f) {
                            *first = Some(i);
                        }
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let mut rest = unsettled.into_inner().unwrap_or_else(|p| p.into_inner());
    rest.sort_unstable();
    (
        illegal.into_inner().unwrap_or_else(|p| p.into_inner()),
        rest,
    )
}

/// Asks porcupine-rs for the partial linearizations of an illegal partition (its verdict
/// was already established without the info variant) and finds where they get stuck.
fn explain<S: Spec>(ops: Vec<LinOp<S>>, converted: &[Operation<SpecModel<S>>]) -> Illegal<S> {
    let (_, info) = porcupine_rs::check_operations_info(converted);
    explain_with(ops, info)
}

/// Finds where the longest partial linearization of an illegal partition gets stuck.
fn explain_with<S: Spec>(ops: Vec<LinOp<S>>, info: LinearizationInfo<SpecModel<S>>) -> Illegal<S> {
    let longest: Vec<usize> = info
        .partial_linearizations
        .first()
        .and_then(|seqs| seqs.iter().max_by_key(|s| s.len()).cloned())
        .unwrap_or_default();
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
        info,
    }
}

/// porcupine-rs's partial linearizations of every partition, for the HTML report of a
/// history that passed (an illegal one carries its own in [`Illegal`]).
pub fn info<S: Spec>(partitions: &[Vec<LinOp<S>>]) -> LinearizationInfo<SpecModel<S>> {
    let mut all = LinearizationInfo::<SpecModel<S>>::empty();
    for p in partitions {
        let (_, one) = porcupine_rs::check_operations_info(&to_porcupine(p));
        all.partial_linearizations
            .extend(one.partial_linearizations);
        all.partition_ops.extend(one.partition_ops);
    }
    all
}
