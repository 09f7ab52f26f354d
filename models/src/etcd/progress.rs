//! What the progress promises read off the etcd model: each client's stage, which
//! steps weak fairness owes, and where the model's time ran out.

use crate::kernel::{ClientPhase, Stage};
use crate::progress::{self, Class, Progress};

use super::model::{Action, EtcdLockModel, EtcdLockState, Lock};

impl Progress for EtcdLockModel {
    fn stages(&self, s: &EtcdLockState) -> Vec<Stage> {
        s.clients.iter().map(|c| c.phase.stage()).collect()
    }

    /// A client's requests, keep-alives and the end of its pause or partition are owed
    /// to it (lease expiries come with the clock's ticks); pauses, crashes,
    /// partitions, lost replies, leader changes and revoked leases may never come.
    fn fairness(&self, a: &Action) -> Option<Class> {
        match *a {
            Action::Step(c) => Some(progress::client(c.into())),
            Action::KeepAlive(c) => Some(progress::heartbeat(c.into())),
            Action::Resume(c) | Action::Heal(c) => Some(progress::recovery(c.into())),
            Action::Tick => Some(progress::CLOCK),
            Action::Pause(_)
            | Action::Crash(_)
            | Action::Hang(_)
            | Action::Partition(_)
            | Action::Drop(_)
            | Action::Failover
            | Action::Revoke(_) => None,
        }
    }

    fn deadline_ahead(&self, s: &EtcdLockState) -> bool {
        self.pending(s)
    }

    fn repeats(&self) -> bool {
        self.repeat
    }

    fn clock_at_bound(&self, s: &EtcdLockState) -> bool {
        s.now >= self.horizon + self.tail
    }

    fn reduce(&self, s: EtcdLockState) -> EtcdLockState {
        self.rebased(s)
    }

    /// The create revision of the client's key, while the key is there: the order the
    /// cluster gave its request (the recipe and the Lock RPC wait by it; the single
    /// key and a described protocol have no order).
    fn arrival(&self, s: &EtcdLockState, c: usize) -> Option<u64> {
        let rev = s.clients.get(c)?.my_rev;
        (self.ordered() && rev > 0 && s.etcd.keys.values().any(|kv| kv.create_rev == rev))
            .then_some(rev)
    }

    fn ordered(&self) -> bool {
        !matches!(self.lock, Lock::SingleKey { .. } | Lock::Described(_))
    }
}
