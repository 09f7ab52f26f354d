//! The inventory model drawn: a lane per buyer and the stock row; every statement an
//! arrow from a buyer to the database.

use crate::diagram::{client, client_state, Exchange, Lane, LaneKind, LaneState};

use super::model::{InventoryAction, InventoryModel, InventoryModelState, InventoryProtocol, Step};
use super::narration::step_words;

/// The stock row's lane.
const STOCK: &str = "stock";

impl InventoryModel {
    pub(super) fn diagram_lanes(&self, s: &InventoryModelState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = s
            .buyers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                Lane::new(
                    client(i),
                    format!("c{i} (instance {})", b.instance),
                    LaneKind::Client,
                )
            })
            .collect();
        lanes.push(Lane::new(STOCK, "stock row (database)", LaneKind::Resource));
        lanes
    }

    pub(super) fn diagram_states(&self, s: &InventoryModelState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .buyers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (_, at) = step_words(b);
                // Between its read and its write a buyer acts on what it read: the
                // window in which another buyer's write makes that read stale.
                client_state(i, at, None, matches!(b.step, Step::Write(..)), false)
            })
            .collect();
        let sold = s.sold();
        out.push(LaneState {
            lane: STOCK.into(),
            status: format!(
                "stock {} v{} ({sold} sold of {})",
                s.store.stock, s.store.version, self.initial
            ),
            critical: sold > self.initial,
            ..LaneState::default()
        });
        out
    }

    pub(super) fn diagram_exchange(
        &self,
        s: &InventoryModelState,
        a: &InventoryAction,
    ) -> Exchange {
        match *a {
            InventoryAction::Tick => Exchange::tick(s.now + 1),
            InventoryAction::Step(i) => {
                let b = &s.buyers[i as usize];
                let local = self.protocol == InventoryProtocol::LocalMutex && b.step == Step::Start;
                match self.step(s, i as usize) {
                    Some((_, what)) if local => Exchange::mark(Some(client(i)), what, false),
                    Some((_, what)) => Exchange::arrow(client(i), STOCK, what, None),
                    None => Exchange::mark(Some(client(i)), "waits", false),
                }
            }
        }
    }
}
