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
    /// The leader's host cut off from the other servers' (both ways; the clients still
    /// reach it): it loses its quorum, and the others elect a new leader. Needs the
    /// servers on hosts of their own. The history names the leader cut off.
    IsolateLeader,
    /// Every cut healed.
    HealIsolation,
    /// The leader killed (`kill -9`): the others elect a new one, which starts every
    /// session's timeout afresh. [`ZkAction::RestartKilled`] brings it back.
    KillLeader,
}

impl FamilyAction for ZkAction {
    fn name(&self) -> &'static str {
        match self {
            ZkAction::LoseCreateReply => "lose-create-reply",
            ZkAction::RestartKilled => "restart-killed",
            ZkAction::IsolateLeader => "isolate-leader",
            ZkAction::HealIsolation => "heal-isolation",
            ZkAction::KillLeader => "kill-leader",
        }
    }

    /// A lost create reply is the model's dropped reply; a leader cut off or killed is
    /// the model's leader change; the killed servers coming back end it, as a healed
    /// cut does (they rejoin as followers: to the model, nothing of its own).
    fn realises(&self) -> Realises {
        match self {
            ZkAction::LoseCreateReply => Realises::Fault(Fault::Drop),
            ZkAction::IsolateLeader | ZkAction::KillLeader => Realises::Fault(Fault::Failover),
            ZkAction::HealIsolation | ZkAction::RestartKilled => Realises::Heal,
        }
    }

    fn target(&self) -> Target {
        match self {
            ZkAction::LoseCreateReply => Target::AnyClient,
            // Named by `target_name`: which servers are down is known only then.
            ZkAction::RestartKilled => Target::Primary,
            ZkAction::IsolateLeader | ZkAction::HealIsolation | ZkAction::KillLeader => {
                Target::Primary
            }
        }
    }

    fn target_name(&self) -> Option<&'static str> {
        match self {
            ZkAction::LoseCreateReply | ZkAction::IsolateLeader | ZkAction::KillLeader => None,
            ZkAction::RestartKilled => Some("killed servers"),
            ZkAction::HealIsolation => Some("the first leader | the other servers, healed"),
        }
    }
}
