//! How a scenario runs on real servers, for any family: the servers' shape, the lock,
//! the workload's timing and the planned faults. The expected verdict is not here: it
//! is the model catalog's (`locklab_models::catalog`), so the two can only agree or
//! visibly disagree. Each family lists its plans in its folder (`redis/plans.rs`);
//! [`crate::registry`] looks through every family.

use crate::family::Family;
use crate::schedule::Step;
use crate::servers::Servers;

/// The shape of a family's servers.
pub type ShapeOf<F> = <<F as Family>::Servers as Servers>::Shape;

/// The faults only a family's servers know.
pub type ActionOf<F> = <<F as Family>::Servers as Servers>::Action;

/// How one scenario runs on a family `F`'s servers.
pub struct Plan<F: Family> {
    /// The catalog id.
    pub id: &'static str,
    /// The servers.
    pub shape: ShapeOf<F>,
    /// The lock.
    pub lock: F::Lock,
    /// Lease asked for with every acquire (ms).
    pub ttl_ms: u64,
    /// Time inside the critical section between the read and the write (ms).
    pub work_ms: u64,
    /// Clients, unless `--clients` says otherwise.
    pub clients: usize,
    /// Run length, unless `--duration` says otherwise (ms).
    pub duration_ms: u64,
    /// Clients start this long after the nemesis (ms), so a fault planned at 0 is in
    /// force before the first acquire.
    pub client_delay_ms: u64,
    /// Whether lock servers run under libfaketime.
    pub fake_clock: bool,
    /// The faults.
    pub faults: Vec<Step<ActionOf<F>>>,
    /// What the faults do, in one sentence, for reports.
    pub story: &'static str,
}

// By hand: a derive would ask the family's marker type to be `Clone`.
impl<F: Family> Clone for Plan<F> {
    fn clone(&self) -> Self {
        Plan {
            id: self.id,
            shape: self.shape.clone(),
            lock: self.lock.clone(),
            faults: self.faults.clone(),
            ..*self
        }
    }
}

impl<F: Family> std::fmt::Debug for Plan<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("id", &self.id)
            .field("shape", &self.shape)
            .field("lock", &self.lock)
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}
