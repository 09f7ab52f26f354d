//! porcupine-rs as a driver of the linearizability check: the spec as porcupine-rs's
//! [`Model`] (its state the set of spec states consistent with the prefix), the check of
//! every partition in two rounds on a pool of one worker per core, and the partial
//! linearizations its HTML visualization draws. Knossos's mutex is checked here; lock
//! and resource histories go through locklab's own search ([`super::decide`]).
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

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use locklab_models::spec::{Spec, Window};
use porcupine_rs::{CheckResult, LinearizationInfo, Model, Operation};

use super::search::{self, Budget, Exhausted};
use super::{
    clamp, explain_with, in_two_rounds, resident_bytes, successor_set, worker_count, Illegal,
    LinOp, LinResult, Round, StateSet, FIRST_SLICE,
};

/// The porcupine-rs model of a spec.
#[derive(Clone, Debug)]
pub struct SpecModel<S>(PhantomData<S>);

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
            StateSet::One(one) => S::describe_state(one),
            StateSet::Many(many) => S::describe_states(many),
        })
    }
}

pub(super) fn to_porcupine<S: Spec>(
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

/// One round: every open partition searched by a pool of one worker per core, for at
/// most `slice` each if given (with porcupine-rs's timeout), otherwise to the end on the
/// worker's own thread (stopped by `abandon` when another partition proves illegal or the
/// deadline passes).
pub(super) fn round<M: Model>(
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
