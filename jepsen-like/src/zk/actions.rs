//! The faults only ZooKeeper has. A holder's pause (its own proxies cut), its partition
//! and its crash are the generic client faults, and `kill -9` of a server or of the
//! leader (`Target::Primary`) the generic server ones; these are the rest.

use locklab_models::registry::Fault;

use crate::schedule::Target;
use crate::schedule::{FamilyAction, Realises};

/// A ZooKeeper-only fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZkAction {
    /// The next create any client sends reaches the ensemble and takes effect, but the
    /// client's proxy drops the connection before the reply comes back: the client sees
    /// a connection loss (and reconnects within its session).
    LoseCreateReply,
    /// Every server that is down (killed by an earlier step) starts again with its data
    /// and rejoins the ensemble.
    RestartKilled,
}

impl FamilyAction for ZkAction {
    fn name(&self) -> &'static str {
        match self {
            ZkAction::LoseCreateReply => "lose-create-reply",
            ZkAction::RestartKilled => "restart-killed",
        }
    }

    /// A lost create reply is the model's dropped reply; the servers coming back end a
    /// leader election the model has no word for.
    fn realises(&self) -> Realises {
        match self {
            ZkAction::LoseCreateReply => Realises::Fault(Fault::Drop),
            ZkAction::RestartKilled => Realises::Beyond,
        }
    }

    fn target(&self) -> Target {
        match self {
            ZkAction::LoseCreateReply => Target::AnyClient,
            // Named by `target_name`: which servers are down is known only then.
            ZkAction::RestartKilled => Target::Primary,
        }
    }

    fn target_name(&self) -> Option<&'static str> {
        match self {
            ZkAction::LoseCreateReply => None,
            ZkAction::RestartKilled => Some("killed servers"),
        }
    }
}
