//! A lock's second promise, progress, as temporal properties under weak fairness:
//! [`Promise::EventuallyFree`] (after a fault — a crash, a lost reply, a failover — the
//! lock is granted again) and
//! [`Promise::StarvationFree`] (a client that keeps asking is granted). A safety search
//! checks each state; these need whole behaviours, so a model's reachable graph is
//! built (`graph.rs`), and a violation is a *lasso* — a stem to a state and a cycle
//! back to it that a fair system may run for ever ([`fair`]).
//!
//! Bounded time would make every lease lock look stuck: at the model's horizon the
//! clock stops, a dead holder's key never expires, and a waiter retries for ever. So a
//! model checked for progress lets time run past its horizon, faults no longer
//! allowed, while a deadline is still ahead. Where time still stops with a deadline
//! ahead — at the end of that tail, or in a dead end, where the model's premise that a
//! holder acts before its lease runs out holds the clock while that holder cannot act
//! (a timelock of the model, not a behaviour of the system) — a lasso proves nothing,
//! and the verdict is *unknown*, never a violation.

mod build;
mod exact;
pub mod fair;
mod graph;
mod tell;

use serde::Serialize;

use crate::check::{Limits, Narrate};
use crate::kernel::Stage;

pub use exact::reduce_commutes;
pub use fair::Class;
pub use tell::Lasso;

/// A progress property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Promise {
    /// After a fault strikes (a crash, a pause, a lost reply, a failover…), the lock is
    /// eventually granted again to a client that waits for it: no fault wedges it.
    EventuallyFree,
    /// Every client that keeps asking for the lock is eventually granted it.
    StarvationFree,
    /// Grants follow the order in which requests reached the lock service: no client
    /// is granted while one whose request came first still waits. Judged only where
    /// the protocol has such an order ([`Progress::arrival`]: ZooKeeper's sequence
    /// numbers, etcd's create revisions); a safety property of paths, so broken by a
    /// finite story, not a lasso.
    Fifo,
}

impl Promise {
    /// All three, in the order reports list them.
    pub const ALL: &'static [Promise] = &[
        Promise::EventuallyFree,
        Promise::StarvationFree,
        Promise::Fifo,
    ];

    /// The name users read and type.
    pub fn name(self) -> &'static str {
        match self {
            Promise::EventuallyFree => "eventually-free",
            Promise::StarvationFree => "starvation-free",
            Promise::Fifo => "fifo",
        }
    }
}

impl std::fmt::Display for Promise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The weak-fairness class of the clock's tick.
pub const CLOCK: Class = 0;

/// The weak-fairness class of server `n`'s own steps (a replica applying a write, a
/// session or lease expiring).
pub fn server(n: usize) -> Class {
    1 + Class::try_from(n).unwrap_or(62).min(62)
}

/// The weak-fairness class of client `c`'s own program: its requests and retries.
/// Its heartbeat and the end of its faults are classes of their own, so that pings
/// taken for ever cannot stand in for a program step that is always possible.
pub fn client(c: usize) -> Class {
    64 + 3 * index(c)
}

/// The weak-fairness class of client `c`'s heartbeat: a ZooKeeper ping, an etcd
/// keep-alive, a Redisson watchdog's renewal.
pub fn heartbeat(c: usize) -> Class {
    client(c) + 1
}

/// The weak-fairness class of the end of client `c`'s pause or partition: a GC pause
/// ends, a cut heals.
pub fn recovery(c: usize) -> Class {
    client(c) + 2
}

/// A client's number as a class index, the last one shared beyond what a class holds.
fn index(c: usize) -> Class {
    Class::try_from(c)
        .unwrap_or(Class::MAX)
        .min((Class::MAX - 66) / 3)
}

/// How far past its horizon a model checked for progress lets time run: long enough
/// for every client in turn to take and drop a lease of `ttl` after the last fault.
pub fn tail(clients: usize, ttl: u64) -> u64 {
    (clients as u64 + 1) * (ttl + 1)
}

/// What the progress properties read off a lock model.
pub trait Progress: Narrate
where
    Self::State: Clone + std::hash::Hash + Eq + std::fmt::Debug,
    Self::Action: Clone + std::fmt::Debug,
{
    /// Where each client is in its program.
    fn stages(&self, s: &Self::State) -> Vec<Stage>;

    /// The step's class under weak fairness; `None` for a fault, which may never come.
    fn fairness(&self, a: &Self::Action) -> Option<Class>;

    /// A deadline is still ahead: a key's expiry, a lease, a session.
    fn deadline_ahead(&self, s: &Self::State) -> bool;

    /// The clock has reached the model's bound (its horizon and tail) and ticks no more.
    fn clock_at_bound(&self, s: &Self::State) -> bool;

    /// The state the graph stores for `s`: `s` itself, or a representative of the
    /// states with the same futures whose steps keep their fairness classes (a model
    /// may sort interchangeable nodes, never its clients, whose classes are theirs; a
    /// model whose clients start over moves its clock back, [`crate::kernel::repeat`]).
    /// Stories are replayed from concrete states, so they show no representative.
    /// [`reduce_commutes`] checks a reduction on random walks.
    fn reduce(&self, s: Self::State) -> Self::State {
        s
    }

    /// Where client `c`'s request stands in the lock service's order (a sequence
    /// number, a create revision), while the service still holds it; `None` where the
    /// protocol has no order (a retry loop, a queue the model does not keep) or the
    /// client has no request in it. A model whose clients never have one is not judged
    /// for [`Promise::Fifo`].
    fn arrival(&self, _s: &Self::State, _c: usize) -> Option<u64> {
        None
    }

    /// Whether the protocol orders its requests at all (see [`Progress::arrival`]).
    fn ordered(&self) -> bool {
        false
    }

    /// Whether a finished client starts over ([`crate::kernel::repeat`]): then one
    /// that gave up after refusals and asks again is still asking, for starvation.
    fn repeats(&self) -> bool {
        false
    }
}

/// A progress verdict.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Kept {
    /// No fair behaviour within the bounds breaks it.
    #[serde(rename = "ok")]
    Holds,
    /// A fair behaviour breaks it: the shortest-stem lasso the search found.
    #[serde(rename = "violation")]
    Violated {
        /// The lasso, told.
        lasso: Box<Lasso>,
    },
    /// Not decided: a limit stopped the graph, or every breaking behaviour found ran
    /// into the bound on time.
    Unknown {
        /// Why, in words.
        why: String,
    },
}

impl Kept {
    /// The verdict in the shared vocabulary.
    pub fn word(&self) -> crate::registry::Verdict {
        match self {
            Kept::Holds => crate::registry::Verdict::Ok,
            Kept::Violated { .. } => crate::registry::Verdict::Violation,
            Kept::Unknown { .. } => crate::registry::Verdict::Unknown,
        }
    }
}

/// The promises of `verdicts` whose verdict is `word`.
pub fn with_word(verdicts: &[Verdict], word: crate::registry::Verdict) -> Vec<Promise> {
    verdicts
        .iter()
        .filter(|v| v.kept.word() == word)
        .map(|v| v.promise)
        .collect()
}

/// One promise's verdict on one model.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The property judged (`eventually-free`, `starvation-free` or `fifo`); a check gives
    /// one verdict per promise.
    pub promise: Promise,
    /// Whether it is kept.
    #[serde(flatten)]
    pub kept: Kept,
    /// Judged with clients that start over when done, so that one may ask for ever
    /// while the others lock again and again (`starvation-free`, where the family's
    /// model can); otherwise each client locks once.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeating: bool,
    /// The graph it was judged on (the same for every promise of one check); `None`
    /// where no graph was built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphSize>,
}

/// How big the graph a verdict was judged on is, and how long it took to build and judge.
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct GraphSize {
    /// Distinct states.
    pub states: usize,
    /// Steps between them.
    pub edges: usize,
    /// Seconds to build the graph and judge every promise on it.
    pub seconds: f64,
}

/// Every promise's verdict on `model`, its graph held to `limits` (states, time,
/// memory, and the threads that expand it; symmetry does not apply: every state is
/// stored as it is, or as [`Progress::reduce`] says, since a lasso's fairness reads
/// each client's own steps).
pub fn check<M>(model: &M, limits: &Limits) -> Vec<Verdict>
where
    M: Progress + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync,
    M::Action: Clone + std::fmt::Debug,
{
    check_only(model, limits, Promise::ALL)
}

/// The verdicts of `promises` on `model` (FIFO only where the model orders its
/// requests), as [`check`] judges them.
pub fn check_only<M>(model: &M, limits: &Limits, promises: &[Promise]) -> Vec<Verdict>
where
    M: Progress + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync,
    M::Action: Clone + std::fmt::Debug,
{
    let started = std::time::Instant::now();
    let built = match build::build(model, limits) {
        Ok(b) => b,
        Err(stop) => {
            let why = format!(
                "the {} stopped the graph before it was whole{}",
                stop.name(),
                stop.advice()
            );
            return unknown_of(promises, why);
        }
    };
    let mut verdicts: Vec<Verdict> = promises
        .iter()
        .filter(|&&p| p != Promise::Fifo || model.ordered())
        .map(|&promise| Verdict {
            promise,
            kept: built.judge(model, promise),
            repeating: false,
            graph: None,
        })
        .collect();
    let size = GraphSize {
        states: built.states(),
        edges: built.edges(),
        seconds: started.elapsed().as_secs_f64(),
    };
    for v in &mut verdicts {
        v.graph = Some(size);
    }
    verdicts
}

/// A model whose progress promises can be judged, behind a pointer: what a catalog
/// row's [`crate::scenario::Build::with_tail`] hands over.
pub trait Judge: Sync {
    /// The promises' verdicts, the graph held to `limits` (see [`check`]).
    fn judge(&self, limits: &Limits) -> Vec<Verdict> {
        self.judge_only(limits, Promise::ALL)
    }

    /// The verdicts of `promises` alone (see [`check_only`]).
    fn judge_only(&self, limits: &Limits, promises: &[Promise]) -> Vec<Verdict>;

    /// [`reduce_commutes`] on the model: whether the states its graph stores keep
    /// every future, on `walks` seeded random walks of `depth` steps.
    fn reduce_commutes(&self, walks: usize, depth: usize, seed: u64) -> Result<usize, String>;
}

impl<M> Judge for M
where
    M: Progress + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync,
    M::Action: Clone + std::fmt::Debug,
{
    fn judge_only(&self, limits: &Limits, promises: &[Promise]) -> Vec<Verdict> {
        check_only(self, limits, promises)
    }

    fn reduce_commutes(&self, walks: usize, depth: usize, seed: u64) -> Result<usize, String> {
        reduce_commutes(self, walks, depth, seed)
    }
}

/// A model that cannot judge progress faithfully: both promises undecided, for the
/// reason it holds.
pub struct Undecided(pub String);

impl Judge for Undecided {
    fn judge_only(&self, _: &Limits, promises: &[Promise]) -> Vec<Verdict> {
        unknown_of(promises, self.0.clone())
    }

    fn reduce_commutes(&self, _: usize, _: usize, _: u64) -> Result<usize, String> {
        Ok(0)
    }
}

/// Both promises undecided, for `why`: where a model cannot judge progress faithfully.
pub fn unknown_all(why: String) -> Vec<Verdict> {
    unknown_of(&[Promise::EventuallyFree, Promise::StarvationFree], why)
}

/// `promises` undecided (FIFO left out: it is judged only where a graph says the
/// model orders its requests), for `why`.
fn unknown_of(promises: &[Promise], why: String) -> Vec<Verdict> {
    promises
        .iter()
        .filter(|&&p| p != Promise::Fifo)
        .map(|&promise| Verdict {
            promise,
            kept: Kept::Unknown { why: why.clone() },
            repeating: false,
            graph: None,
        })
        .collect()
}

/// The progress verdicts of a row whose model `once` has clients that lock once, and
/// `again` (where the family has one) clients that start over: `starvation-free` is
/// judged on `again` — one client asking for ever while the others take turns needs
/// others that come back — and `eventually-free` and `fifo` on `once`, whose lassos
/// are the shortest. Without `again`, every promise is judged on `once`.
pub fn judge_row(once: &dyn Judge, again: Option<&dyn Judge>, limits: &Limits) -> Vec<Verdict> {
    let Some(again) = again else {
        return once.judge(limits);
    };
    // The two graphs are independent: each judged on a core of its own, the row's
    // answer in the time of the larger (the repeating one, most often).
    let (mut verdicts, starving) = std::thread::scope(|scope| {
        let starving = scope.spawn(|| again.judge_only(limits, &[Promise::StarvationFree]));
        let verdicts = once.judge_only(limits, &[Promise::EventuallyFree, Promise::Fifo]);
        let starving = starving
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (verdicts, starving)
    });
    let starving = starving.into_iter().map(|v| Verdict {
        repeating: true,
        ..v
    });
    verdicts.splice(1..1, starving);
    verdicts
}

#[cfg(test)]
mod tests;
