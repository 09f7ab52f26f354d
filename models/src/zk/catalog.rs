//! The `zk-*` rows of the catalog, and how each builds its [`ZkLockModel`].

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::registry::ScenarioId;
use crate::registry::{Family, Fault, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::{Recipe, WatchOn, Work, ZkLockModel};

/// A ZooKeeper row's typed configuration; the bounds and fault budgets come from
/// [`Params`] (the session timeout is `ttl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkLock {
    /// How clients lock.
    pub recipe: Recipe,
    /// What the critical section does.
    pub work: Work,
}

impl ZkLock {
    /// `recipe` with `work`.
    pub const fn new(recipe: Recipe, work: Work) -> ZkLock {
        ZkLock { recipe, work }
    }
}

impl Build for ZkLock {
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
        Some(Box::new(model))
    }
}

impl ZkLock {
    /// The row's model with `properties` checked at bounds `p`.
    pub fn model(&self, properties: &'static [Property], p: &Params) -> ZkLockModel {
        ZkLockModel {
            recipe: self.recipe,
            work: self.work,
            clients: p.clients,
            timeout: p.ttl,
            faults: Budget::of(&p.faults),
            // Long enough for a session nobody pings to expire while the next client
            // still has time to take the lock.
            horizon: p.ttl * 2 + 2,
            tail: 0,
            repeat: false,
            properties,
        }
    }
}

/// The recipe as the write-ups give it: `create /lock/n- (ephemeral, sequential)`,
/// `getChildren /lock`, the lowest owns, a waiter watches the node just before its own;
/// the holder stops at SUSPENDED. Its names carry no owner id, which only matters when a
/// create's reply is lost.
pub const RECIPE: Recipe = Recipe {
    watch_on: WatchOn::Predecessor,
    protected: false,
    stop_at_suspended: true,
    sequential: true,
};

const MX: &[Property] = &[Property::MutualExclusion];
const LIVE: &[Property] = &[Property::Liveness];
const MX_LIVE: &[Property] = &[Property::MutualExclusion, Property::Liveness];
const RES: &[Property] = &[Property::ResourceSafety];

/// Every ZooKeeper scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    let one = |fault: Fault| Params::BASE.with_faults(&[(fault, 1)]);
    let zk = Family::Zk;
    vec![
        Scenario {
            id: ScenarioId::ZkSequential.into(),
            family: zk,
            protocol: "ephemeral sequential node under /lock, the lowest owns, each waiter watches its predecessor (Curator's InterProcessMutex)",
            faults: "holder crash",
            properties: MX_LIVE,
            expected: Holds,
            lesson: "A crashed holder stops pinging: ZooKeeper expires its session after the timeout, deletes its ephemeral node, the next waiter's watch fires and it owns the lock — free again after the session timeout, never stuck.",
            defaults: one(Fault::Crash),
            model: &const { ZkLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::ZkSequentialPause.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe (the lowest node owns, waiters watch their predecessor)",
            faults: "holder pause (pings stop too) > session timeout",
            properties: MX,
            expected: Violates(MX),
            lesson: "A session cannot tell a dead holder from a stopped one: the paused holder's session expires, its node goes, the next waiter is woken and owns the lock, and the holder resumes believing it still holds it.",
            defaults: one(Fault::Pause),
            model: &const { ZkLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::ZkSequentialFenced.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe; the lock node's czxid is a fencing token the resource checks",
            faults: "holder pause > session timeout",
            properties: RES,
            expected: Holds,
            lesson: "zxids only grow, so the next holder's node has a larger czxid and the resource can refuse the paused holder's stale token.",
            defaults: one(Fault::Pause),
            model: &const { ZkLock::new(RECIPE, Work::Fenced) },
        },
        Scenario {
            id: ScenarioId::ZkCheckWrite.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe; the protected write is multi(check(lock node), setData(/counter)) in ZooKeeper",
            faults: "holder pause > session timeout",
            properties: RES,
            expected: Holds,
            lesson: "When the write itself checks the lock node, a holder whose node is gone cannot write at all: the multi fails as a whole.",
            defaults: one(Fault::Pause),
            model: &const { ZkLock::new(RECIPE, Work::MultiChecked) },
        },
        Scenario {
            id: ScenarioId::ZkUntilLost.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe; the holder stops only when told its session is lost, not when its connection is suspended",
            faults: "holder partitioned from the ensemble > session timeout",
            properties: MX,
            expected: Violates(MX),
            lesson: "A partitioned client hears of its session's expiry only when it reaches the ensemble again; until then it works on while the server has expired it and granted the next waiter. Curator's advice: treat SUSPENDED as lost.",
            defaults: one(Fault::Partition),
            model: &const {
                ZkLock::new(
                    Recipe {
                        stop_at_suspended: false,
                        ..RECIPE
                    },
                    Work::Outside,
                )
            },
        },
        Scenario {
            id: ScenarioId::ZkCreateConnLoss.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe; the create is retried blindly after a lost reply, no owner id in the node name",
            faults: "connection loss during create (the create took effect, its reply is lost)",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "The first create made a node nobody knows as theirs, ephemeral of a live session: it is the lowest, so everyone — the retrying client too — waits behind it until that session ends. Curator's protected create (an owner id in the name) finds it instead.",
            defaults: one(Fault::Drop),
            model: &const { ZkLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::ZkHerd.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe, but every waiter watches /lock's children instead of its predecessor",
            faults: "none; 3 clients",
            properties: MX_LIVE,
            expected: Holds,
            lesson: "Still a lock, but each release wakes every waiter (N-1 wake-ups with N clients: 2 at the default 3, 7 with 8) where the predecessor watch wakes one: O(N) vs O(1) getChildren calls per release.",
            defaults: Params {
                clients: 3,
                ..Params::BASE
            },
            model: &const {
                ZkLock::new(
                    Recipe {
                        watch_on: WatchOn::Parent,
                        ..RECIPE
                    },
                    Work::Outside,
                )
            },
        },
        Scenario {
            id: ScenarioId::ZkPlainZnode.into(),
            family: zk,
            protocol: "plain-znode spin lock: create /lock/holder (ephemeral); on NODEEXISTS watch it and create again when it goes; release deletes it",
            faults: "none; 3 clients",
            properties: MX,
            expected: Holds,
            lesson: "The create is atomic, so one node is one holder and the session's end frees it; but the waiters are not queued: each release wakes every waiter to race for the next create (the herd, as zk-herd), and whoever wins need not have waited longest — there is no request order to be fair to, where the sequential recipe grants in order.",
            defaults: Params {
                clients: 3,
                ..Params::BASE
            },
            model: &const {
                ZkLock::new(
                    Recipe {
                        sequential: false,
                        ..RECIPE
                    },
                    Work::Outside,
                )
            },
        },
        Scenario {
            id: ScenarioId::ZkLeaderIsolated.into(),
            family: zk,
            protocol: "ephemeral-sequential recipe on a three-server ensemble",
            faults: "the leader cut off from the other two servers (a partition: it runs on)",
            properties: MX,
            expected: Holds,
            lesson: "Unlike Sentinel's split brain, the isolated leader cannot grant anything: a create needs a quorum, so the minority side commits nothing and drops its clients, which reconnect to the majority within their session timeout; the new leader gives every session a fresh timeout, so the holder keeps its node. The quorum protects the lock's record, not a holder cut off with the old leader: its session still expires (zk-until-lost).",
            defaults: one(Fault::Failover),
            model: &const { ZkLock::new(RECIPE, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::ZkHungWorker.into(),
            family: zk,
            protocol: "Curator's recipe (protected ephemeral-sequential node, predecessor watch, SUSPENDED treated as lost)",
            faults: "the holder's worker hangs for good (a deadlock, a call that never returns); its session's pings go on",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "A session proves the process is alive, not that its work is: the holder's worker hangs inside its section while the client library's own thread keeps pinging, so the session never expires, the ephemeral node never goes, and every waiter waits for ever — no crash, no partition, and still no progress. Only something that watches the work (a deadline on the section that ends the session) frees it.",
            defaults: one(Fault::Hang),
            model: &const { ZkLock::new(Recipe::CURATOR, Work::Outside) },
        },
        Scenario {
            id: ScenarioId::ZkClockJump.into(),
            family: zk,
            protocol: "Curator's recipe (protected ephemeral-sequential node, predecessor watch, SUSPENDED treated as lost)",
            faults: "the leader's clock leaps ahead (libfaketime): sessions time out on it early",
            properties: MX,
            expected: Violates(MX),
            lesson: "A session's timeout runs on the leader's clock, not on its client's: when the leader's clock leaps ahead, sessions that had not pinged since time out on it at once, the running, connected holder's too. Its node goes and the next waiter is granted; the holder hears SUSPENDED only as the server closes its connection, after the node is gone, so even Curator's advice cannot make it stop first. The node's czxid as a fencing token keeps its late write out.",
            defaults: one(Fault::Jump),
            model: &const { ZkLock::new(Recipe::CURATOR, Work::Outside) },
        },
    ]
}
