//! The inventory model told in words: each buyer's step, the stock row, and how a unit
//! came to be sold twice.

use crate::check::Narrate;
use crate::diagram::{Exchange, Lane, LaneState};
use crate::registry::Property;

use super::model::{
    Buyer, InventoryAction, InventoryModel, InventoryModelState, InventoryProtocol, Orders, Step,
};

/// A buyer's step in words: on its story line, and (shorter) on its diagram lane.
pub(super) fn step_words(b: &Buyer) -> (String, String) {
    let (story, lane) = match b.step {
        Step::Start => ("not started", "not started"),
        Step::Read => ("about to read", "about to read"),
        Step::Write(n, v) => {
            let read = format!("read stock {n} (version {v}), about to write");
            return (read, format!("read {n}, will write"));
        }
        Step::Done if b.bought && b.units == 1 => ("done", "bought one"),
        Step::Done if b.bought => {
            let lane = format!("bought {}", b.units);
            return ("done".to_string(), lane);
        }
        Step::Done => ("done", "done"),
    };
    (story.to_string(), lane.to_string())
}

impl Narrate for InventoryModel {
    fn describe_state(&self, s: &InventoryModelState) -> Vec<String> {
        let mut lines = vec![format!("clock t={}", s.now)];
        for (i, b) in s.buyers.iter().enumerate() {
            let (at, _) = step_words(b);
            let got = match (b.bought, b.units) {
                (false, _) => String::new(),
                (true, 1) => ", bought one".to_string(),
                (true, k) => format!(", bought {k}"),
            };
            let wants = if b.units == 1 {
                String::new()
            } else {
                format!(", orders {}", b.units)
            };
            lines.push(format!("c{i} (instance {}{wants}): {at}{got}", b.instance));
        }
        let sold = s.sold();
        lines.push(format!(
            "resource: stock={} version={} (started with {}, {sold} sold)",
            s.store.stock, s.store.version, self.initial
        ));
        lines
    }

    fn describe_action(&self, s: &InventoryModelState, a: &InventoryAction) -> String {
        match a {
            InventoryAction::Step(i) => match self.step(s, *i as usize) {
                Some((_, what)) => format!("c{i} {what}"),
                None => format!("c{i} waits"),
            },
            InventoryAction::Tick => format!("time passes to t={}", s.now + 1),
        }
    }

    fn lanes(&self, s: &InventoryModelState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &InventoryModelState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &InventoryModelState) -> Option<u64> {
        Some(s.now)
    }

    fn exchange(&self, s: &InventoryModelState, a: &InventoryAction) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, _: &InventoryAction) -> bool {
        false
    }

    fn why(&self, _: Property, path: &[(Option<InventoryAction>, InventoryModelState)]) -> String {
        let (sold, stock) = path
            .last()
            .map(|(_, s)| (s.sold(), s.store.stock))
            .unwrap_or_default();
        match self.protocol {
            InventoryProtocol::TimestampCas => format!(
                "Both writes happened in the same tick, so the \"version\" did not change and the second CAS matched a stale read: {sold} sold, stock {stock}, from {}.", self.initial
            ),
            InventoryProtocol::LocalMutex => format!(
                "Each instance's mutex only excludes its own threads; buyers in the two instances read the same stock: {sold} sold from {}.", self.initial
            ),
            _ if self.orders != Orders::OneEach => format!("Both buyers read the stock before either wrote it, and each saw enough for its order: {sold} units sold from {} (stock {stock}), though not every order could be met.", self.initial),
            _ => format!("Both buyers read the stock before either wrote it: {sold} sold from {} (stock {stock}).", self.initial),
        }
    }
}
