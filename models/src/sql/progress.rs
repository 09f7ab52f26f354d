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
            Action::Step { client: c, .. } => Some(progress::client(c.into())),
            Action::Resume(c) => Some(progress::recovery(c.into())),
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

    fn repeats(&self) -> bool {
        self.repeat
    }

    fn clock_at_bound(&self, s: &SqlLockState) -> bool {
        s.now >= self.horizon + self.tail
    }

    fn reduce(&self, s: SqlLockState) -> SqlLockState {
        self.rebased(s)
    }

    /// A waiting statement's place in the lock's queue at the server.
    fn arrival(&self, s: &SqlLockState, c: usize) -> Option<u64> {
        let at = s.queue.iter().position(|&q| usize::from(q) == c)?;
        u64::try_from(at).ok()
    }

    /// A lock whose statements wait at the server is granted in their order; the row
    /// protocols, `GET_LOCK(?, 0)` and the application's own lock have none.
    fn ordered(&self) -> bool {
        self.lock.queued()
    }
}
