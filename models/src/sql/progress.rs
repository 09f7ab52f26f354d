//! What the progress promises read off the SQL model: each client's stage, which
//! steps weak fairness owes, and where the model's time ran out.

use crate::kernel::{ClientPhase, Stage};
use crate::progress::{self, Class, Progress};

use super::model::{Action, SqlLockModel, SqlLockState};

impl Progress for SqlLockModel {
    fn stages(&self, s: &SqlLockState) -> Vec<Stage> {
        s.clients.iter().map(|c| c.phase.stage()).collect()
    }

    /// A client's statements and the end of its pause are owed to it, the reaper job
    /// runs while it lives, the clock ticks; pauses, crashes, killed sessions, clock
    /// jumps and the reaper's death may never come.
    fn fairness(&self, a: &Action) -> Option<Class> {
        match *a {
            Action::Step { client: c, .. } | Action::Resume(c) => Some(progress::client(c.into())),
            Action::Tick => Some(progress::CLOCK),
            Action::Reap => Some(progress::server(0)),
            Action::Pause(_)
            | Action::Crash(_)
            | Action::Hang(_)
            | Action::Kill(_)
            | Action::Skew(_)
            | Action::Jump
            | Action::ReaperDies
            | Action::Rollback(_) => None,
        }
    }

    fn deadline_ahead(&self, s: &SqlLockState) -> bool {
        self.pending(s)
    }

    fn clock_at_bound(&self, s: &SqlLockState) -> bool {
        s.now >= self.horizon + self.tail
    }
}
