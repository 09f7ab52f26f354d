//! The `inventory-*` rows of the catalog, and how each builds its [`InventoryModel`].

use crate::checkable::Checkable;
use crate::registry::ScenarioId;
use crate::registry::{Family, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::{InventoryModel, InventoryProtocol};

/// An inventory row's configuration is its protocol; one unit fewer than buyers is in
/// stock, so someone must be refused.
impl Build for InventoryProtocol {
    fn build(&self, _: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(InventoryModel {
            protocol: *self,
            clients: p.clients,
            initial: p.clients as i64 - 1,
            horizon: 2,
        })
    }
}

const RES: &[Property] = &[Property::ResourceSafety];

/// Every `inventory-*` scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    use InventoryProtocol::*;
    let inventory = Family::Inventory;
    vec![
        Scenario {
            id: ScenarioId::InventoryNoLock.name(),
            family: inventory,
            protocol: "read stock, check > 0, write stock − 1",
            faults: "none",
            properties: RES,
            expected: Violates(RES),
            lesson: "Read-check-write is three steps; two buyers read the same stock and both sell the last unit.",
            defaults: Params::BASE,
            model: &NoLock,
        },
        Scenario {
            id: ScenarioId::InventoryLocalMutex.name(),
            family: inventory,
            protocol: "read-check-write inside a per-process mutex, 2 app instances",
            faults: "none",
            properties: RES,
            expected: Violates(RES),
            lesson: "A mutex only excludes threads of its own process; a second instance oversells anyway.",
            defaults: Params::BASE,
            model: &LocalMutex,
        },
        Scenario {
            id: ScenarioId::InventoryOneSql.name(),
            family: inventory,
            protocol: "UPDATE stock SET n = n − 1 WHERE n >= 1",
            faults: "none",
            properties: RES,
            expected: Holds,
            lesson: "One conditional statement is atomic in the database: no lock needed.",
            defaults: Params::BASE,
            model: &OneSql,
        },
        Scenario {
            id: ScenarioId::InventoryOptimistic.name(),
            family: inventory,
            protocol: "read version, UPDATE … WHERE version = v (bump), retry",
            faults: "none",
            properties: RES,
            expected: Holds,
            lesson: "Version CAS rejects a write based on a stale read; the loser retries.",
            defaults: Params::BASE,
            model: &Optimistic,
        },
        Scenario {
            id: ScenarioId::InventoryTimestampCas.name(),
            family: inventory,
            protocol: "optimistic CAS with a coarse timestamp as version",
            faults: "two writes in one tick",
            properties: RES,
            expected: Violates(RES),
            lesson: "A timestamp is not a version: two writes in one tick leave it unchanged and the stale CAS succeeds (ABA).",
            defaults: Params::BASE,
            model: &TimestampCas,
        },
    ]
}
