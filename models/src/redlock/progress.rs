//! What the progress promises read off the Redlock model: each client's stage, which
//! steps weak fairness owes, and where the model's time ran out.

use crate::kernel::{ClientPhase, Stage};
use crate::progress::{self, Class, Progress};

use super::model::{RedlockModel, RedlockState, RlAction};

impl Progress for RedlockModel {
    fn stages(&self, s: &RedlockState) -> Vec<Stage> {
        s.clients.iter().map(|c| c.phase.stage()).collect()
    }

    /// A client's SETs, its decision, its leaving and the end of its pause are owed to
    /// it; a crashed node restarts once its delay is over; the clock ticks. Node
    /// crashes, clock jumps, splits and pauses may never come; a split heals.
    fn fairness(&self, a: &RlAction) -> Option<Class> {
        match *a {
            RlAction::Send(c, _)
            | RlAction::Decide(c)
            | RlAction::Leave(c)
            | RlAction::Again(c) => Some(progress::client(c.into())),
            RlAction::Resume(c) => Some(progress::recovery(c.into())),
            RlAction::Tick => Some(progress::CLOCK),
            // One class for every node's restart: the graph sorts the nodes, so a
            // place is not a node; with one crash at a time it is the same promise.
            RlAction::Restart(_) => Some(progress::server(0)),
            // A partition heals in the end, as Jepsen's nemesis always heals: a class
            // of its own beside the restarts'.
            RlAction::Heal => Some(progress::server(1)),
            RlAction::Crash(_) | RlAction::Jump(_) | RlAction::Split(..) | RlAction::Pause(_) => {
                None
            }
        }
    }

    fn deadline_ahead(&self, s: &RedlockState) -> bool {
        self.pending(s)
    }

    fn repeats(&self) -> bool {
        self.repeat
    }

    fn clock_at_bound(&self, s: &RedlockState) -> bool {
        s.now >= self.horizon + self.tail
    }

    /// Nodes are interchangeable until a fault or a client tells them apart; where
    /// clients start over, the clock is moved back first.
    fn reduce(&self, s: RedlockState) -> RedlockState {
        self.nodes_sorted(self.rebased(s))
    }
}
