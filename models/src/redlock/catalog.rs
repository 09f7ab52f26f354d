//! The `redlock*` rows of the catalog, and how each builds its [`RedlockModel`].

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::registry::ScenarioId;
use crate::registry::{Family, Fault, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::RedlockModel;
use crate::protocol::by_address::ByAddress;
use crate::protocol::redlock::RedlockProtocol;

/// When a crashed node comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// As soon as the checker likes.
    Immediate,
    /// Not before one TTL has passed, so every lock it granted has expired.
    AfterTtl,
    /// As soon as the checker likes, with every key it had: each node appends every
    /// write to a file before it replies (`appendonly yes`), and a killed process's
    /// file is still there.
    WithData,
}

/// A Redlock row's typed configuration; the node count, clients, TTL and fault budgets
/// come from the row's [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redlock {
    /// When a crashed node restarts.
    pub restart: Restart,
}

impl Redlock {
    /// The model at bounds `p`; time runs `tail` past the horizon (see
    /// [`RedlockModel::tail`]).
    fn model(&self, p: &Params, tail: u64) -> RedlockModel {
        RedlockModel {
            nodes: p.nodes,
            clients: p.clients,
            ttl: p.ttl,
            drift: 1,
            attempts: 2,
            faults: Budget::of(&p.faults),
            restart_delay: match self.restart {
                Restart::Immediate | Restart::WithData => 0,
                Restart::AfterTtl => p.ttl,
            },
            persistent: self.restart == Restart::WithData,
            horizon: match tail == crate::kernel::repeat::FOR_EVER {
                true => crate::kernel::repeat::horizon(&Budget::of(&p.faults), p.ttl + 2),
                false => p.ttl + 2,
            },
            tail,
            repeat: tail == crate::kernel::repeat::FOR_EVER,
            protocol: None,
            quorum: None,
        }
    }

    /// The model of a user's Redlock `d` at bounds `p`, restarting nodes as `self` does.
    pub fn described(&self, d: &'static RedlockProtocol, p: &Params, tail: u64) -> RedlockModel {
        RedlockModel {
            protocol: Some(ByAddress(&d.steps)),
            quorum: d.quorum.map(usize::from),
            drift: d.drift,
            attempts: d.attempts,
            ..self.model(p, tail)
        }
    }
}

impl Build for Redlock {
    fn build(&self, _: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(self.model(p, 0))
    }

    fn with_tail(&self, _: &Scenario, p: &Params, tail: u64) -> Option<Box<dyn progress::Judge>> {
        Some(Box::new(self.model(p, tail)))
    }

    fn repeating(&self, _: &Scenario, p: &Params) -> Option<Box<dyn progress::Judge>> {
        Some(Box::new(self.model(p, crate::kernel::repeat::FOR_EVER)))
    }
}

const MX: &[Property] = &[Property::MutualExclusion];
const REDLOCK: Redlock = Redlock {
    restart: Restart::Immediate,
};

/// Every `redlock*` scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    let five = Params {
        nodes: 5,
        ..Params::BASE
    };
    let one = |fault: Fault| five.clone().with_faults(&[(fault, 1)]);
    let redlock = Family::Redlock;
    vec![
        Scenario {
            id: ScenarioId::Redlock.into(),
            family: redlock,
            protocol: "Redlock: SET NX PX on N nodes, majority, validity = TTL − elapsed − drift",
            faults: "none",
            properties: MX,
            expected: Holds,
            lesson: "With independent nodes and no faults, a majority cannot be held twice.",
            defaults: five.clone(),
            model: &REDLOCK,
        },
        Scenario {
            id: ScenarioId::RedlockRestart.into(),
            family: redlock,
            protocol: "Redlock",
            faults: "node crash + restart without persistence",
            properties: MX,
            expected: Violates(MX),
            lesson: "A node that restarts empty forgets the lock it granted; a second client can build a majority with it.",
            defaults: one(Fault::Restart),
            model: &REDLOCK,
        },
        Scenario {
            id: ScenarioId::RedlockDelayedRestart.into(),
            family: redlock,
            protocol: "Redlock, crashed nodes stay down ≥ TTL",
            faults: "node crash + delayed restart",
            properties: MX,
            expected: Holds,
            lesson: "Delaying the restart for a TTL lets every lock it held expire first.",
            defaults: one(Fault::Restart),
            model: &Redlock {
                restart: Restart::AfterTtl,
            },
        },
        Scenario {
            id: ScenarioId::RedlockRestartAof.into(),
            family: redlock,
            protocol: "Redlock, every node appendonly yes (appendfsync everysec)",
            faults: "node killed (kill -9) and restarted at once on its append-only file",
            properties: MX,
            expected: Holds,
            lesson: "Redis appends each write to its append-only file before it replies, so a killed process loses nothing it acknowledged: the node comes back with the lock and its expiry, and no second majority forms. What appendfsync everysec can still lose is the last second of writes in a host crash or power cut, which only the operating system's page cache held — that is redlock-restart again, and why the delayed restart is still advised.",
            defaults: one(Fault::Restart),
            model: &Redlock {
                restart: Restart::WithData,
            },
        },
        Scenario {
            id: ScenarioId::RedlockClockJump.into(),
            family: redlock,
            protocol: "Redlock",
            faults: "clock jump on one node",
            properties: MX,
            expected: Violates(MX),
            lesson: "Redlock trusts every node's clock; one jump expires a granted key early.",
            defaults: one(Fault::Jump),
            model: &REDLOCK,
        },
        Scenario {
            id: ScenarioId::RedlockPause.into(),
            family: redlock,
            protocol: "Redlock",
            faults: "client pause > validity",
            properties: MX,
            expected: Violates(MX),
            lesson: "A paused holder outlives its validity; Redlock has no fencing token to stop it.",
            defaults: one(Fault::Pause),
            model: &REDLOCK,
        },
        Scenario {
            id: ScenarioId::RedlockSplitMajorities.into(),
            family: redlock,
            protocol: "Redlock",
            faults: "network partition: nodes and clients split into two sides, later healed",
            properties: MX,
            expected: Holds,
            lesson: "A partition alone cannot give Redlock two holders: only one side of a split can hold a majority of the nodes, so a client on the other side counts too few grants, releases what it got and retries. The keys the majority side wrote outlive the heal. Redlock breaks when a node forgets (a restart), a clock runs wrong or a holder pauses, not when the network splits.",
            // Three nodes ask the same question as five (only one side of any split
            // holds a majority) in a twentieth of the states.
            defaults: Params {
                nodes: 3,
                ..Params::BASE
            }
            .with_faults(&[(Fault::Partition, 1)]),
            model: &REDLOCK,
        },
    ]
}
