//! The `inventory-*` rows of the catalog, and how each builds its [`InventoryModel`].

use crate::checkable::Checkable;
use crate::registry::ScenarioId;
use crate::registry::{Family, Property};
use crate::scenario::{Build, Expected, Params, Scenario};

use super::model::{InventoryModel, InventoryProtocol, Orders};

/// An inventory row's configuration with one unit per buyer is its protocol; one unit
/// fewer than buyers is in stock, so someone must be refused.
impl Build for InventoryProtocol {
    fn build(&self, s: &Scenario, p: &Params) -> Box<dyn Checkable> {
        InventoryRow {
            protocol: *self,
            orders: Orders::OneEach,
        }
        .build(s, p)
    }
}

/// An inventory row: how buyers take their units and what they order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InventoryRow {
    /// How buyers take their units.
    pub protocol: InventoryProtocol,
    /// What each orders, and the stock they order from.
    pub orders: Orders,
}

impl Build for InventoryRow {
    fn build(&self, _: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(InventoryModel {
            protocol: self.protocol,
            clients: p.clients,
            orders: self.orders,
            initial: self.orders.stock(p.clients),
            horizon: 2,
        })
    }
}

/// The inventory row `id`'s protocol and orders, for the real runs to buy as the model
/// does (`None`: not an inventory row).
pub fn row(id: ScenarioId) -> Option<InventoryRow> {
    use InventoryProtocol::*;
    let (protocol, orders) = match id {
        ScenarioId::InventoryNoLock => (NoLock, Orders::OneEach),
        ScenarioId::InventoryLocalMutex => (LocalMutex, Orders::OneEach),
        ScenarioId::InventoryOneSql => (OneSql, Orders::OneEach),
        ScenarioId::InventoryOptimistic => (Optimistic, Orders::OneEach),
        ScenarioId::InventoryTimestampCas => (TimestampCas, Orders::OneEach),
        ScenarioId::InventoryPhantomNoLock => (NoLock, Orders::Phantom),
        ScenarioId::InventoryPhantomOneSql => (OneSql, Orders::Phantom),
        _ => return None,
    };
    Some(InventoryRow { protocol, orders })
}

const PHANTOM_NO_LOCK: InventoryRow = InventoryRow {
    protocol: InventoryProtocol::NoLock,
    orders: Orders::Phantom,
};
const PHANTOM_ONE_SQL: InventoryRow = InventoryRow {
    protocol: InventoryProtocol::OneSql,
    orders: Orders::Phantom,
};

const RES: &[Property] = &[Property::ResourceSafety];

/// Every `inventory-*` scenario.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    use InventoryProtocol::*;
    let inventory = Family::Inventory;
    vec![
        Scenario {
            id: ScenarioId::InventoryNoLock.into(),
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
            id: ScenarioId::InventoryLocalMutex.into(),
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
            id: ScenarioId::InventoryOneSql.into(),
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
            id: ScenarioId::InventoryOptimistic.into(),
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
            id: ScenarioId::InventoryTimestampCas.into(),
            family: inventory,
            protocol: "optimistic CAS with a coarse timestamp as version",
            faults: "two writes in one tick",
            properties: RES,
            expected: Violates(RES),
            lesson: "A timestamp is not a version: two writes in one tick leave it unchanged and the stale CAS succeeds (ABA).",
            defaults: Params::BASE,
            model: &TimestampCas,
        },
        Scenario {
            id: ScenarioId::InventoryPhantomNoLock.into(),
            family: inventory,
            protocol: "4 in stock, orders of 3 and 2: read stock, check ≥ order, write stock − order",
            faults: "none",
            properties: RES,
            expected: Violates(RES),
            lesson: "Both buyers see 4 left, each enough for its own order: both orders succeed and 5 units are sold from 4 — the phantom inventory.",
            defaults: Params::BASE,
            model: &PHANTOM_NO_LOCK,
        },
        Scenario {
            id: ScenarioId::InventoryPhantomOneSql.into(),
            family: inventory,
            protocol: "4 in stock, orders of 3 and 2: UPDATE stock SET n = n − k WHERE n >= k",
            faults: "none",
            properties: RES,
            expected: Holds,
            lesson: "The condition checks the whole order in the statement that takes it: exactly one of the two orders is met.",
            defaults: Params::BASE,
            model: &PHANTOM_ONE_SQL,
        },
    ]
}
