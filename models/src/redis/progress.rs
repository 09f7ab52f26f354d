//! What the progress promises read off the Redis model: each client's stage, which
//! steps weak fairness owes, and where the model's time ran out.

use crate::kernel::{ClientPhase, Stage};
use crate::progress::{self, Class, Progress};

use super::model::{Action, RedisLockModel, RedisLockState};

impl Progress for RedisLockModel {
    fn stages(&self, s: &RedisLockState) -> Vec<Stage> {
        s.clients.iter().map(|c| c.phase.stage()).collect()
    }

    /// A client's own steps, its watchdog, the end of its pause and of its split are owed
    /// to it; a replica applies what it was sent; the clock ticks. Pauses, crashes,
    /// hangs, failovers and splits may never come.
    fn fairness(&self, a: &Action) -> Option<Class> {
        match *a {
            // A partition heals, in the end (Jepsen's nemesis always heals).
            Action::Step(c) => Some(progress::client(c.into())),
            Action::Renew(c) => Some(progress::heartbeat(c.into())),
            Action::Resume(c) | Action::Heal(c) => Some(progress::recovery(c.into())),
            Action::Tick => Some(progress::CLOCK),
            Action::Replicate(r) => Some(progress::server(r.into())),
            Action::Pause(_)
            | Action::Crash(_)
            | Action::Hang(_)
            | Action::Failover(_)
            | Action::Split(_) => None,
        }
    }

    fn deadline_ahead(&self, s: &RedisLockState) -> bool {
        self.pending(s)
    }

    fn repeats(&self) -> bool {
        self.repeat
    }

    fn clock_at_bound(&self, s: &RedisLockState) -> bool {
        s.now >= self.horizon + self.tail
    }

    fn reduce(&self, s: RedisLockState) -> RedisLockState {
        self.rebased(s)
    }
}
