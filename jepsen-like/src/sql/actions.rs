//! The database's own fault: the server ends the session that holds the lock, as an
//! operator's `KILL CONNECTION` / `pg_terminate_backend`, a `wait_timeout`, or a
//! failover of the connection's proxy would.

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
}

impl FamilyAction for SqlAction {
    fn name(&self) -> &'static str {
        match self {
            SqlAction::KillHolderSession => "kill-holder-session",
        }
    }

    /// The model's killed session.
    fn realises(&self) -> Realises {
        Realises::Fault(Fault::Kill)
    }

    fn target(&self) -> Target {
        Target::Primary
    }
}
