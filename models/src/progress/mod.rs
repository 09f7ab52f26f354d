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
pub mod fair;
mod graph;
mod tell;

use serde::Serialize;

use crate::check::{Limits, Narrate};
use crate::kernel::Stage;

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

/// The weak-fairness class of client `c`'s steps: its program, its retries, its
/// watchdog, and the end of a pause or partition (a GC pause ends; a cut heals).
pub fn client(c: usize) -> Class {
    64 + Class::try_from(c)
        .unwrap_or(Class::MAX - 64)
        .min(Class::MAX - 64)
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
    /// may sort interchangeable nodes, never its clients, whose classes are theirs).
    /// Stories are replayed from concrete states, so they show no representative.
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

/// One promise's verdict on one model.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The property judged (`eventually-free`, `starvation-free` or `fifo`); a check gives
    /// one verdict per promise.
    pub promise: Promise,
    /// Whether it is kept.
    #[serde(flatten)]
    pub kept: Kept,
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

/// Both promises' verdicts on `model`, its graph held to `limits` (states, time,
/// memory, and the threads that expand it; symmetry does not apply: every state is
/// stored as it is, or as [`Progress::reduce`] says, since a lasso's fairness reads
/// each client's own steps).
pub fn check<M>(model: &M, limits: &Limits) -> Vec<Verdict>
where
    M: Progress + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync,
    M::Action: Clone + std::fmt::Debug,
{
    let started = std::time::Instant::now();
    let built = match build::build(model, limits) {
        Ok(b) => b,
        Err(stop) => {
            return unknown_all(format!(
                "the {} stopped the graph before it was whole (raise {})",
                stop.name(),
                stop.flag()
            ))
        }
    };
    let mut verdicts: Vec<Verdict> = Promise::ALL
        .iter()
        .filter(|&&p| p != Promise::Fifo || model.ordered())
        .map(|&promise| Verdict {
            promise,
            kept: built.judge(model, promise),
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
pub trait Judge {
    /// The promises' verdicts, the graph held to `limits` (see [`check`]).
    fn judge(&self, limits: &Limits) -> Vec<Verdict>;
}

impl<M> Judge for M
where
    M: Progress + Sync,
    M::State: Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync,
    M::Action: Clone + std::fmt::Debug,
{
    fn judge(&self, limits: &Limits) -> Vec<Verdict> {
        check(self, limits)
    }
}

/// A model that cannot judge progress faithfully: both promises undecided, for the
/// reason it holds.
pub struct Undecided(pub String);

impl Judge for Undecided {
    fn judge(&self, _: &Limits) -> Vec<Verdict> {
        unknown_all(self.0.clone())
    }
}

/// Both promises undecided, for `why`: where a model cannot judge progress faithfully.
pub fn unknown_all(why: String) -> Vec<Verdict> {
    [Promise::EventuallyFree, Promise::StarvationFree]
        .iter()
        .map(|&promise| Verdict {
            promise,
            kept: Kept::Unknown { why: why.clone() },
            graph: None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
