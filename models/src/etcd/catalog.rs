//! The `etcd-*` rows of the catalog, and how each builds its [`EtcdLockModel`].

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::registry::ScenarioId;
use crate::registry::{Family, Fault, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::{EtcdLockModel, Lock, Work};

/// An etcd row's typed configuration; the bounds and fault budgets come from [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtcdLock {
    /// How clients lock.
    pub lock: Lock,
    /// What the critical section does.
    pub work: Work,
    /// The model's leader change is a partition that cuts the leader off from the other
    /// members (it runs on, but cannot commit), not a kill: only the story differs.
    pub leader_cut: bool,
}

impl EtcdLock {
    /// `lock` with `work`.
    pub const fn new(lock: Lock, work: Work) -> EtcdLock {
        EtcdLock {
            lock,
            work,
            leader_cut: false,
        }
    }

    /// The same lock, its leader cut off from the quorum rather than killed.
    pub const fn leader_cut(self) -> EtcdLock {
        EtcdLock {
            leader_cut: true,
            ..self
        }
    }
}

impl Build for EtcdLock {
    fn build(&self, scenario: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(self.model(scenario.properties, p))
    }

    fn with_tail(
        &self,
        scenario: &Scenario,
        p: &Params,
        tail: u64,
    ) -> Option<Box<dyn progress::Judge>> {
        let mut model = self.model(scenario.properties, p);
        model.tail = tail;
        Some(Box::new(model))
    }

    fn repeating(&self, scenario: &Scenario, p: &Params) -> Option<Box<dyn progress::Judge>> {
        let mut model = self.model(scenario.properties, p);
        model.tail = crate::kernel::repeat::FOR_EVER;
        model.horizon = crate::kernel::repeat::horizon(&model.faults, model.horizon);
        model.repeat = true;
        model
            .can_repeat()
            .then(|| Box::new(model) as Box<dyn progress::Judge>)
    }
}

impl EtcdLock {
    /// The row's model with `properties` checked at bounds `p`.
    pub fn model(&self, properties: &'static [Property], p: &Params) -> EtcdLockModel {
        let failovers = p.budget(Fault::Failover);
        EtcdLockModel {
            lock: self.lock,
            work: self.work,
            clients: p.clients,
            ttl: p.ttl,
            faults: Budget::of(&p.faults),
            // Long enough for a lease nobody keeps alive to run out after every leader
            // change has restarted it.
            horizon: p.ttl * (u64::from(failovers) + 2) + 2,
            tail: 0,
            repeat: false,
            properties,
            leader_cut: self.leader_cut,
        }
    }
}

const MX: &[Property] = &[Property::MutualExclusion];
const MX_FR: &[Property] = &[Property::MutualExclusion, Property::NoForeignRelease];
const MX_LIVE: &[Property] = &[Property::MutualExclusion, Property::Liveness];
const RES: &[Property] = &[Property::ResourceSafety];
const LIVE: &[Property] = &[Property::Liveness];

/// Every etcd scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    let one = |fault: Fault| Params::BASE.with_faults(&[(fault, 1)]);
    let three = |fault: Fault| Params {
        clients: 3,
        ..Params::BASE.with_faults(&[(fault, 1)])
    };
    let etcd = Family::Etcd;
    const RECIPE: Lock = Lock::Recipe;
    vec![
        Scenario {
            id: ScenarioId::EtcdLeaseCrash.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe: session lease, create lock/<lease> if absent, lowest create revision owns, waiters wait for the key before theirs",
            faults: "holder crash",
            properties: MX_LIVE,
            expected: Holds,
            lesson: "A crashed holder stops keeping its lease alive: the lease expires, etcd deletes its key, and the next waiter owns the lock — free again after the TTL, never stuck.",
            defaults: one(Fault::Crash),
            model: &const { EtcdLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdLeasePause.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe (session lease, lowest create revision owns)",
            faults: "holder pause (keep-alives stop too) > lease TTL",
            properties: MX,
            expected: Violates(MX),
            lesson: "A lease cannot tell a dead holder from a stopped one: the paused holder's lease expires, the next waiter is granted, and the holder resumes believing it still holds the lock (Jepsen's lock-set on etcd 3.4.3).",
            defaults: one(Fault::Pause),
            model: &const { EtcdLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdLeaseFenced.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe; the lock key's create revision is a fencing token the resource checks",
            faults: "holder pause > lease TTL",
            properties: RES,
            expected: Holds,
            lesson: "Create revisions only grow, so the resource can refuse the paused holder's stale token once the next holder has shown a larger one.",
            defaults: one(Fault::Pause),
            model: &const { EtcdLock::new(RECIPE, Work::Fenced) },
        },
        Scenario {
            id: ScenarioId::EtcdTxnGuarded.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe; the protected write is a Txn: if create_revision(lock key) = mine then put",
            faults: "holder pause > lease TTL",
            properties: RES,
            expected: Holds,
            lesson: "When the write itself is guarded by the lock key, a holder whose key is gone cannot write at all (Jepsen's lock-etcd-set lost nothing).",
            defaults: one(Fault::Pause),
            model: &const { EtcdLock::new(RECIPE, Work::TxnGuarded) },
        },
        Scenario {
            id: ScenarioId::EtcdLeasePartition.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe (session lease, lowest create revision owns)",
            faults: "holder partitioned from the cluster > lease TTL",
            properties: MX,
            expected: Violates(MX),
            lesson: "A partitioned holder runs on but its keep-alives do not arrive: etcd expires its lease and grants the next waiter while the holder keeps working.",
            defaults: one(Fault::Partition),
            model: &const { EtcdLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdLockExpiredWaiter.into(),
            family: etcd,
            protocol: "etcd's server-side Lock RPC (etcd-client's lock()) on the caller's lease",
            faults: "a queued waiter's lease is revoked (as when it expires)",
            properties: MX,
            expected: Holds,
            lesson: "A correct server checks the waiter's own key still exists before granting; etcd issue 11456 was a server that did not, and granted a lock on an expired lease.",
            defaults: three(Fault::Revoke),
            model: &const { EtcdLock::new(Lock::LockRpc { check_own_key: true }, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdUnlockRetry.into(),
            family: etcd,
            protocol: "one key: txn if create_revision(lock) = 0 then put lock --lease; release del lock, retried by name when the reply is lost",
            faults: "lost release reply",
            properties: MX_FR,
            expected: Violates(MX_FR),
            lesson: "A retried delete by name is not idempotent: the first one worked, the key is someone else's by the retry, and deleting it lets a third client in. Guarding the delete by the create revision makes the retry harmless.",
            defaults: three(Fault::Drop),
            model: &const { EtcdLock::new(Lock::SingleKey { guarded_release: false }, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdUnlockRetryGuarded.into(),
            family: etcd,
            protocol: "one key, as etcd-unlock-retry; released by txn if create_revision(lock) = mine then del lock, retried when the reply is lost",
            faults: "lost release reply",
            properties: MX_FR,
            expected: Holds,
            lesson: "Guarded by the key's create revision, a release can only delete the incarnation its sender created: the retry after a lost reply finds the next holder's key and leaves it alone.",
            defaults: three(Fault::Drop),
            model: &const { EtcdLock::new(Lock::SingleKey { guarded_release: true }, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdLeaderChurn.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe (session lease, lowest create revision owns)",
            faults: "holder crash; the leader killed twice",
            properties: MX_LIVE,
            expected: Holds,
            lesson: "A new leader restarts every lease's TTL, so a dead holder's lock is freed later, but it is freed: nobody keeps the lease alive.",
            defaults: Params::BASE.with_faults(&[(Fault::Crash, 1), (Fault::Failover, 2)]),
            model: &const { EtcdLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::EtcdLeaderIsolated.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe (session lease, lowest create revision owns) on three members",
            faults: "the leader cut off from the other two members (a partition: it runs on)",
            properties: MX,
            expected: Holds,
            lesson: "Unlike Sentinel's split brain, the isolated leader cannot grant anything: every write needs a quorum, so the minority side commits nothing, and the majority's new leader restarts every lease's TTL — the holder keeps its lock through the partition. The quorum protects the lock's record, not a holder cut off with the old leader: its lease still runs out (etcd-lease-partition).",
            defaults: one(Fault::Failover),
            model: &const { EtcdLock::new(RECIPE, Work::Outside).leader_cut() },
        },
        Scenario {
            id: ScenarioId::EtcdHungWorker.into(),
            family: etcd,
            protocol: "concurrency-Mutex recipe (session lease kept alive by the client's own task, lowest create revision owns)",
            faults: "the holder's worker hangs for good (a deadlock, a call that never returns); its keep-alives go on",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "A lease proves the process is alive, not that its work is: the holder's worker hangs inside its section while the session's keep-alive task renews the lease, so the lease never expires, the key never goes, and every waiter waits for ever. The mirror image of etcd-lease-pause, where the keep-alives stop with the work and the lock is shared; here they outlive it and the lock is stuck. Only a deadline on the work that revokes the lease frees it.",
            defaults: one(Fault::Hang),
            model: &const { EtcdLock::new(RECIPE, Work::Outside) },
        },
    ]
}
