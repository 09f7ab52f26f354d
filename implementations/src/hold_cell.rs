//! The client-side record of one lock handle's holds, shared by its guards and its
//! watchdog.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Notify;

use crate::hold_state::HoldState;
use crate::ownership::Ownership;

/// The client-side state of one lock handle's holds: count, generation, watchdog
/// wake-up, and the ownership of the current generation. A non-reentrant grant has a
/// cell of its own; a reentrant handle shares one cell between all its guards.
#[derive(Debug)]
pub struct HoldCell {
    state: HoldState,
    wake: Notify,
    ownership: std::sync::Mutex<Arc<Ownership>>,
}

impl Default for HoldCell {
    fn default() -> Self {
        HoldCell {
            state: HoldState::new(),
            wake: Notify::new(),
            ownership: std::sync::Mutex::new(Arc::new(Ownership::new(None))),
        }
    }
}

impl HoldCell {
    /// A cell with no holds.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Holds currently counted.
    pub fn holds(&self) -> u32 {
        self.state.holds()
    }

    pub(crate) fn state(&self) -> &HoldState {
        &self.state
    }

    pub(crate) fn wake(&self) -> &Notify {
        &self.wake
    }

    /// Counts a grant the server just confirmed, valid until `deadline`: the first hold
    /// of a generation gets fresh ownership, a re-entry refreshes the deadline.
    ///
    /// `first_hold` hears of a first hold (its generation and ownership) before any
    /// other grant is counted, so that the guard starts the generation's watchdog in
    /// the same step; it lives there because the watchdog module builds on this one.
    pub(crate) fn enter(
        &self,
        deadline: Option<Instant>,
        first_hold: impl FnOnce(u32, &Arc<Ownership>),
    ) -> Arc<Ownership> {
        let mut slot = self.ownership.lock().unwrap_or_else(|p| p.into_inner());
        let entered = self.state.enter();
        if entered.first {
            *slot = Arc::new(Ownership::new(deadline));
            first_hold(entered.generation, &slot);
        } else if let Some(d) = deadline {
            slot.extend(d);
        }
        slot.clone()
    }

    /// Counts one release; wakes the watchdog when the generation ends. Called *before*
    /// the release command is sent (see [`HoldState`]).
    pub(crate) fn exit(&self) -> bool {
        match self.state.exit() {
            Some(e) => {
                if e.last {
                    self.wake.notify_waiters();
                }
                true
            }
            None => false,
        }
    }
}
