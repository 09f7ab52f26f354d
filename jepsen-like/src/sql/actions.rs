//! The database's own faults: the server ends the session that holds the lock, as an
//! operator's `KILL CONNECTION` / `pg_terminate_backend`, a `wait_timeout`, or a
//! failover of the connection's proxy would; and the reaper job beside it dies.

use locklab_models::registry::Fault;

use crate::schedule::Target;
use crate::schedule::{FamilyAction, Realises};

/// The lock name the runner gives every client. Family faults are not told the run's
/// key (`Cluster::apply` takes the action alone), so the SQL faults name it here.
pub const RUN_KEY: &str = "locklab:lock";

/// A SQL-only fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlAction {
    /// Kill the session that holds the run's lock.
    KillHolderSession,
    /// The reaper job stops for good, as its cron host going down would stop it.
    StopReaper,
}

impl FamilyAction for SqlAction {
    fn name(&self) -> &'static str {
        match self {
            SqlAction::KillHolderSession => "kill-holder-session",
            SqlAction::StopReaper => "stop-reaper",
        }
    }

    /// The model's killed session, the model's dead reaper.
    fn realises(&self) -> Realises {
        match self {
            SqlAction::KillHolderSession => Realises::Fault(Fault::Kill),
            SqlAction::StopReaper => Realises::Fault(Fault::ReaperDies),
        }
    }

    fn target(&self) -> Target {
        Target::Primary
    }
}
