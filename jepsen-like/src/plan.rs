//! How a scenario runs on real servers, for any family: the servers' shape, the lock,
//! the workload's timing and the planned faults. The expected verdict is not here: it
//! is the model catalog's (`locklab_models::catalog`), so the two can only agree or
//! visibly disagree. Each family lists its plans in its folder (`redis/plans.rs`);
//! [`crate::registry`] looks through every family.

use locklab_models::catalog;
use locklab_models::registry::{Fault, ScenarioId};

use crate::family::{ActionOf, Family, ShapeOf};
use crate::schedule::Realises;
use crate::schedule::Step;

/// The scenarios a family runs on its servers; each family's folder implements it
/// beside its plan list (`zk/plans.rs`).
pub trait Planned: Family {
    /// Every scenario of the family that runs on these servers.
    fn plans() -> Vec<Plan<Self>>;

    /// `plan` with `replicas` replicas behind its primary (`--replicas`), for a family
    /// whose servers have a replica count to choose.
    fn with_replicas(plan: Plan<Self>, _replicas: usize) -> Result<Plan<Self>, String> {
        Err(format!(
            "--replicas: {} has no replica count to choose",
            plan.id
        ))
    }
}

/// How one scenario runs on a family `F`'s servers.
pub struct Plan<F: Family> {
    /// The catalog row it runs.
    pub id: ScenarioId,
    /// The servers.
    pub shape: ShapeOf<F>,
    /// The recipe each client builds its own lock from, unless the run brings a custom one.
    pub lock: F::Lock,
    /// Lease asked for with every acquire (ms).
    pub ttl_ms: u64,
    /// Time inside the critical section between the read and the write (ms).
    pub work_ms: u64,
    /// Where the row's story is two holders at once and what lets the second in is
    /// timed by the servers (Sentinel promoting a replica), a holder stays inside past
    /// `work_ms` until another client has entered, at most this long (ms), as long as
    /// no two clients have been inside together yet: a slow machine then delays the
    /// overlap, and never loses it. `None`: `work_ms` by the clock.
    pub overlap_within_ms: Option<u64>,
    /// Clients, unless `--clients` says otherwise.
    pub clients: usize,
    /// Run length, unless `--duration` says otherwise (ms).
    pub duration_ms: u64,
    /// Clients start this long after the nemesis (ms), so a fault planned at 0 is in
    /// force before the first acquire.
    pub client_delay_ms: u64,
    /// Whether lock servers run under libfaketime.
    pub fake_clock: bool,
    /// The nemesis steps as planned, in order; each attempt jitters their times from its
    /// seed and never reorders them.
    pub faults: Vec<Step<ActionOf<F>>>,
    /// What the faults do, in one sentence, for reports.
    pub story: &'static str,
    /// Why the plan adds faults its row's model does not have, when it does (a pause
    /// past the lease that makes a foreign release provable from a history, where the
    /// model needs no fault to find it). `None`: the row's faults are the plan's.
    pub beyond_model: Option<&'static str>,
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

impl<F: Family> Plan<F> {
    /// The model's faults the plan realises — its lock's knobs, then its steps — each
    /// once.
    pub fn faults_realised(&self) -> Vec<Fault> {
        let mut faults = F::lock_realises(&self.lock);
        for step in &self.faults {
            let realised = match F::realises(&step.action) {
                Realises::Fault(f) => vec![f],
                Realises::Faults(fs) => fs.to_vec(),
                _ => Vec::new(),
            };
            for f in realised {
                if !faults.contains(&f) {
                    faults.push(f);
                }
            }
        }
        faults
    }

    /// Whether the plan injects only faults its catalog row's model has (a budget
    /// above 0 at the row's default bounds), and each of them: the row's faults are
    /// the plan's. A step the model has no word for is an error too — unless the plan
    /// says why it goes beyond the model ([`Plan::beyond_model`]).
    pub fn check_faults(&self) -> Result<(), String> {
        let row = catalog::row(self.id);
        let modelled: Vec<Fault> = row
            .defaults
            .faults
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(f, _)| *f)
            .collect();
        let names = |fs: &[Fault]| {
            if fs.is_empty() {
                "none".to_string()
            } else {
                fs.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
            }
        };
        if self.beyond_model.is_some() {
            return Ok(());
        }
        for (n, step) in self.faults.iter().enumerate() {
            let why = match F::realises(&step.action) {
                Realises::Fault(f) if modelled.contains(&f) => continue,
                Realises::Faults(fs) if fs.iter().all(|f| modelled.contains(f)) => continue,
                Realises::Faults(fs) => format!(
                    "injects {}",
                    fs.iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
                Realises::Heal | Realises::Steer => continue,
                Realises::Fault(f) => format!("injects {f}"),
                Realises::Beyond => "injects a fault the model has no word for".to_string(),
            };
            return Err(format!(
                "{}: step {} ({}) {why}; the row's model faults: {}",
                self.id,
                n + 1,
                step.action.name(),
                names(&modelled)
            ));
        }
        let realised = self.faults_realised();
        let missing: Vec<Fault> = modelled
            .iter()
            .copied()
            .filter(|f| !realised.contains(f))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{}: the row's model has {} but the plan never injects it",
                self.id,
                names(&missing)
            ));
        }
        Ok(())
    }
}
