//! The `redis-*` rows of the catalog, and how each builds its [`RedisLockModel`].

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::registry::ScenarioId;
use crate::registry::{Family, Fault, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::RedisLockModel;
use super::protocol::{Protocol, ValueKind};

/// A Redis row's typed configuration: how its clients lock. The bounds (clients, TTL,
/// replicas, fault budgets) come from the row's [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedisLock {
    /// The client's command sequence.
    pub protocol: Protocol,
    /// What a client writes as its identity.
    pub value: ValueKind,
    /// `WAIT n` after acquiring, before entering.
    pub wait: Option<u32>,
    /// Take an `INCR` fencing token and present it to the resource.
    pub fencing: bool,
    /// The section locks again ([`RedisLockModel::reenters`]).
    pub reenters: bool,
}

impl RedisLock {
    /// `protocol` writing `value`, without `WAIT` or fencing.
    pub const fn new(protocol: Protocol, value: ValueKind) -> RedisLock {
        RedisLock {
            protocol,
            value,
            wait: None,
            fencing: false,
            reenters: false,
        }
    }

    /// The same, its section calling `lock()` again (a nested method).
    pub const fn nested(self) -> RedisLock {
        RedisLock {
            reenters: true,
            ..self
        }
    }

    /// The same, waiting for `replicas` acknowledgements before entering.
    pub const fn wait(self, replicas: u32) -> RedisLock {
        RedisLock {
            wait: Some(replicas),
            ..self
        }
    }

    /// The same, with a fencing token checked by the resource.
    pub const fn fenced(self) -> RedisLock {
        RedisLock {
            fencing: true,
            ..self
        }
    }
}

impl RedisLock {
    /// The model of `scenario` with `p`; time runs `tail` past the horizon (see
    /// [`RedisLockModel::tail`]).
    fn model(&self, scenario: &Scenario, p: &Params, tail: u64) -> RedisLockModel {
        RedisLockModel {
            protocol: self.protocol,
            value: self.value,
            clients: p.clients,
            ttl: p.ttl,
            replicas: p.replicas,
            wait: self.wait,
            fencing: self.fencing,
            reenters: self.reenters,
            faults: Budget::of(&p.faults),
            down_after: Sentinel::of(scenario).down_after,
            min_replicas_lag: Sentinel::of(scenario).min_replicas_lag,
            horizon: match tail == crate::kernel::repeat::FOR_EVER {
                true => crate::kernel::repeat::horizon(&Budget::of(&p.faults), 2 * p.ttl + 1),
                false => 2 * p.ttl + 1,
            },
            tail,
            repeat: tail == crate::kernel::repeat::FOR_EVER,
            properties: scenario.properties,
        }
    }
}

impl Build for RedisLock {
    fn build(&self, scenario: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(self.model(scenario, p, 0))
    }

    fn with_tail(
        &self,
        scenario: &Scenario,
        p: &Params,
        tail: u64,
    ) -> Option<Box<dyn progress::Judge>> {
        Some(Box::new(self.model(scenario, p, tail)))
    }

    fn repeating(&self, scenario: &Scenario, p: &Params) -> Option<Box<dyn progress::Judge>> {
        let m = self.model(scenario, p, crate::kernel::repeat::FOR_EVER);
        m.can_repeat()
            .then(|| Box::new(m) as Box<dyn progress::Judge>)
    }
}

/// How the servers of a row are set up, where a row's lesson is in that set-up rather
/// than in its clients: Sentinel's `down-after-milliseconds` and the master's
/// `min-replicas-to-write 1` / `min-replicas-max-lag`. A protocol file checked in a
/// row's environment gets the same servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sentinel {
    /// Ticks a master must be unreachable before Sentinel promotes a replica (counted
    /// only where the row cuts the master off: a crashed master's failover is untimed).
    pub down_after: u64,
    /// `min-replicas-max-lag` in ticks, when the master refuses writes without a
    /// replica that acknowledged within it.
    pub min_replicas_lag: Option<u64>,
}

impl Sentinel {
    /// Sentinel waits a lease (the default TTL's two ticks) before it promotes.
    const DOWN_AFTER: u64 = 2;

    /// The servers of `scenario`'s row.
    pub fn of(scenario: &Scenario) -> Sentinel {
        match scenario.id.row() {
            Some(ScenarioId::RedisSplitBrain) => Sentinel {
                down_after: Self::DOWN_AFTER,
                min_replicas_lag: None,
            },
            Some(ScenarioId::RedisSplitBrainMinReplicas) => Sentinel {
                down_after: Self::DOWN_AFTER,
                min_replicas_lag: Some(1),
            },
            _ => Sentinel::default(),
        }
    }
}

const MX: &[Property] = &[Property::MutualExclusion];
const MX_FR: &[Property] = &[Property::MutualExclusion, Property::NoForeignRelease];
const FR: &[Property] = &[Property::NoForeignRelease];
const LIVE: &[Property] = &[Property::Liveness];
const MX_LIVE: &[Property] = &[Property::MutualExclusion, Property::Liveness];
const RES: &[Property] = &[Property::ResourceSafety];
const MX_REENT: &[Property] = &[Property::MutualExclusion, Property::Reentrancy];
const REENT: &[Property] = &[
    Property::MutualExclusion,
    Property::NoForeignRelease,
    Property::Reentrancy,
];

/// Every `redis-*` scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    use Protocol::*;
    use ValueKind::*;
    let one = |fault: Fault| Params::BASE.with_faults(&[(fault, 1)]);
    let failover = Params {
        replicas: 1,
        ..one(Fault::Failover)
    };
    let split = Params {
        replicas: 1,
        ..Params::BASE.with_faults(&[(Fault::Split, 1), (Fault::Failover, 1)])
    };
    let redis = Family::Redis;
    vec![
        Scenario {
            id: ScenarioId::RedisGetSet.into(),
            family: redis,
            protocol: "GET lock; if nil SET lock v; DEL",
            faults: "none",
            properties: MX,
            expected: Violates(MX),
            lesson: "Check-then-set in two commands races: use one atomic SET NX.",
            defaults: Params::BASE,
            model: &const { RedisLock::new(GetSet, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisSetnxNoTtl.into(),
            family: redis,
            protocol: "SETNX lock v; DEL",
            faults: "holder crash",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "A lock without TTL outlives a crashed holder: deadlock.",
            defaults: one(Fault::Crash),
            model: &const { RedisLock::new(SetNx, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisSetnxExpire.into(),
            family: redis,
            protocol: "SETNX lock v; then PEXPIRE lock ttl; DEL",
            faults: "crash between SETNX and EXPIRE",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "SETNX and EXPIRE are two commands; a crash between them leaves a lock without TTL. Use SET NX PX.",
            defaults: one(Fault::Crash),
            model: &const { RedisLock::new(SetNxExpire, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisDelUnconditional.into(),
            family: redis,
            protocol: "SET lock v NX PX ttl; DEL",
            faults: "holder pause > TTL",
            properties: MX_FR,
            expected: Violates(MX_FR),
            lesson: "After its lease ran out, the holder's unconditional DEL removes the next holder's lock.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(SetPxDel, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisGetThenDel.into(),
            family: redis,
            protocol: "SET NX PX; release: GET, if mine DEL",
            faults: "pause between GET and DEL",
            properties: FR,
            expected: Violates(FR),
            lesson: "The owner check and the DEL are two commands; the lock can change hands between them. Use the Lua script.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(SetPxGetDel, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisTimestampValue.into(),
            family: redis,
            protocol: "SET lock <ms timestamp> NX PX; compare-and-delete",
            faults: "two acquires in one ms, holder pause > TTL",
            properties: FR,
            expected: Violates(FR),
            lesson: "A timestamp is not an identity: two clients starting in one ms share it, and compare-and-delete deletes the other's lock (ABA). Use a UUID.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(SetPxLua, Timestamp) },
        },
        Scenario {
            id: ScenarioId::RedisLua.into(),
            family: redis,
            protocol: "SET lock uuid NX PX; compare-and-delete script",
            faults: "none",
            properties: MX_FR,
            expected: Holds,
            lesson: "SET NX PX plus an atomic compare-and-delete is a correct lock while holders finish within the TTL.",
            defaults: Params::BASE,
            model: &const { RedisLock::new(SetPxLua, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisLuaReentry.into(),
            family: redis,
            protocol: "SET lock uuid NX PX; compare-and-delete script — and the section calls lock() again (a method that locks calls another that locks the same key)",
            faults: "none",
            properties: MX_REENT,
            expected: Violates(MX_REENT),
            lesson: "Not reentrant, so the holder's nested lock() is refused by its own key and waits for itself — write-up 000's 'no reentrancy, deadlock': without a TTL for ever, a deadlock with no crash; with one, until its own lease runs out — and then the lock is anyone's while the outer call is still inside, and the nested unlock deletes whatever key it finds its own. Count holds per owner (redis-reentrant) or do not nest.",
            defaults: Params::BASE,
            model: &const { RedisLock::new(SetPxLua, Unique).nested() },
        },
        Scenario {
            id: ScenarioId::RedisLuaPause.into(),
            family: redis,
            protocol: "SET lock uuid NX PX; compare-and-delete script",
            faults: "holder pause > TTL",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "The script prevents foreign release, but a holder paused past its TTL still shares the critical section.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(SetPxLua, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisLuaFenced.into(),
            family: redis,
            protocol: "SET NX PX + compare-and-delete + INCR fencing token checked by the resource",
            faults: "holder pause > TTL",
            properties: RES,
            expected: Holds,
            lesson: "Fencing tokens make the resource refuse the paused holder's stale writes: the resource stays safe although the lock does not.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(SetPxLua, Unique).fenced() },
        },
        Scenario {
            id: ScenarioId::RedisReentrant.into(),
            family: redis,
            protocol: "Redisson hash scripts (HINCRBY hold counts) + watchdog",
            faults: "none",
            properties: REENT,
            expected: Holds,
            lesson: "Hold counts per uuid:thread make the lock reentrant; the watchdog keeps it while the holder lives.",
            defaults: Params::BASE,
            model: &const { RedisLock::new(Redisson, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisReentrantPause.into(),
            family: redis,
            protocol: "Redisson hash scripts + watchdog",
            faults: "pause > TTL (watchdog paused too)",
            properties: REENT,
            expected: Violates(&[Property::MutualExclusion, Property::Reentrancy]),
            lesson: "The watchdog runs in the paused process; a stop-the-world pause longer than the lease loses the lock — and a re-entry after it silently takes a fresh lock with count 1, so the inner unlock frees it while the outer hold is still counted.",
            defaults: one(Fault::Pause),
            model: &const { RedisLock::new(Redisson, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisReentrantHung.into(),
            family: redis,
            protocol: "Redisson hash scripts + watchdog (lock() without a lease time)",
            faults: "the holder's worker hangs for good (a deadlock, a call that never returns); its watchdog runs on",
            properties: MX_LIVE,
            expected: Violates(LIVE),
            lesson: "Redisson's watchdog is a timer in the holder's process, not a check on its work: while the worker hangs inside its section the process lives, the watchdog renews the lease every third of it, and the key never expires — every other client waits for ever. The mirror image of redis-reentrant-pause, where the watchdog stops with the work and the lock is shared; here it outlives the work and the lock is stuck. lock(leaseTime) without the watchdog, or a deadline on the work, frees it.",
            defaults: one(Fault::Hang),
            model: &const { RedisLock::new(Redisson, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisReentrantThreadId.into(),
            family: redis,
            protocol: "Redisson hash scripts, field = thread id without per-process UUID",
            faults: "none",
            properties: REENT,
            expected: Violates(MX_FR),
            lesson: "Thread ids repeat across processes: without the UUID, another process re-enters your lock and releases your hold (ABA).",
            defaults: Params::BASE,
            model: &const { RedisLock::new(Redisson, ThreadId) },
        },
        Scenario {
            id: ScenarioId::RedisFailover.into(),
            family: redis,
            protocol: "SET NX PX + compare-and-delete on a master with an async replica, Sentinel",
            faults: "failover before replication",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "Replication is asynchronous: a failover can promote a replica that never saw the lock.",
            defaults: failover.clone(),
            model: &const { RedisLock::new(SetPxLua, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisFailoverWait.into(),
            family: redis,
            protocol: "SET NX PX + compare-and-delete behind Sentinel, WAIT 1 before entering",
            faults: "failover",
            properties: MX_FR,
            expected: Holds,
            lesson: "WAIT 1 is safe with one replica; with --replicas 2 Sentinel may promote the lagging one and the lock is lost again.",
            defaults: failover,
            model: &const { RedisLock::new(SetPxLua, Unique).wait(1) },
        },
        Scenario {
            id: ScenarioId::RedisSplitBrain.into(),
            family: redis,
            protocol: "SET NX PX + compare-and-delete behind Sentinel (down-after: one lease)",
            faults: "split brain: the master and one client cut off from the Sentinels and the replica; no process dies",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "Nothing crashed: the old master, cut off with a client, still grants the lock on its side while Sentinel promotes the replica on the other — two masters, two holders. Replication speed does not matter; the grant on the old master never could reach the new one.",
            defaults: split.clone(),
            model: &const { RedisLock::new(SetPxLua, Unique) },
        },
        Scenario {
            id: ScenarioId::RedisSplitBrainMinReplicas.into(),
            family: redis,
            protocol: "same with two replicas, every server set to min-replicas-to-write 1, min-replicas-max-lag 1 tick",
            faults: "split brain, as redis-split-brain",
            properties: MX_FR,
            expected: Violates(MX),
            lesson: "min-replicas-max-lag only bounds how long the old master keeps accepting writes; a lock it grants inside that lag still runs for its whole lease while the promoted master, which has the other replica, grants it again. The window is lag + TTL against Sentinel's down-after: here 1 + 2 ticks against 2, so it remains (with --ttl 1 it closes). With --replicas 1 the promoted master refuses writes too, until the partition heals and the old master rejoins as its replica — a full sync that wipes the lock its client still believes it holds.",
            defaults: Params {
                replicas: 2,
                ..split
            },
            model: &const { RedisLock::new(SetPxLua, Unique) },
        },
    ]
}
