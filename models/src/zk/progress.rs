//! What the progress promises read off the ZooKeeper model: each client's stage, which
//! steps weak fairness owes, and where the model's time ran out.

use crate::kernel::{ClientPhase, Stage};
use crate::progress::{self, Class, Progress};

use super::model::{Action, ZkLockModel, ZkLockState};
use super::spec::sequence;

impl Progress for ZkLockModel {
    fn stages(&self, s: &ZkLockState) -> Vec<Stage> {
        s.clients.iter().map(|c| c.phase.stage()).collect()
    }

    /// A client's requests, pings, its stop at SUSPENDED and the end of its pause or
    /// partition are owed to it (the ensemble's expiries come with the clock's
    /// ticks); pauses, crashes, hangs, partitions, lost replies, leader changes and
    /// leaps of the leader's clock may never come.
    fn fairness(&self, a: &Action) -> Option<Class> {
        match *a {
            Action::Step(c) | Action::Suspend(c) => Some(progress::client(c.into())),
            Action::Ping(c) => Some(progress::heartbeat(c.into())),
            Action::Resume(c) | Action::Heal(c) => Some(progress::recovery(c.into())),
            Action::Tick => Some(progress::CLOCK),
            Action::Pause(_)
            | Action::Crash(_)
            | Action::Hang(_)
            | Action::Partition(_)
            | Action::Drop(_)
            | Action::Failover
            | Action::Jump(_) => None,
        }
    }

    fn deadline_ahead(&self, s: &ZkLockState) -> bool {
        self.pending(s)
    }

    fn repeats(&self) -> bool {
        self.repeat
    }

    fn clock_at_bound(&self, s: &ZkLockState) -> bool {
        s.now >= self.horizon + self.tail
    }

    fn reduce(&self, s: ZkLockState) -> ZkLockState {
        self.rebased(s)
    }

    /// The sequence number of the client's node, while the node is there: the order
    /// the ensemble gave its request.
    fn arrival(&self, s: &ZkLockState, c: usize) -> Option<u64> {
        let node = s.clients.get(c)?.node.as_ref()?;
        if !s.zk.nodes.contains_key(node) {
            return None;
        }
        sequence(node).map(u64::from)
    }

    /// The sequential recipe's requests are ordered by their nodes' sequence numbers;
    /// the plain node's creates are not queued at all.
    fn ordered(&self) -> bool {
        self.recipe.sequential
    }
}
