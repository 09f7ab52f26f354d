//! The faults only etcd has: a leader change the way an operator forces one (kill -9
//! of the leader, the others elect a new one, the old one restarts with its data), and
//! an operator revoking the lease of a client that waits in the lock's queue. A
//! holder's pause, partition, crash and lost release reply are the generic client
//! faults; a member's kill and restart the generic server ones.

use locklab_models::registry::Fault;

use crate::schedule::Target;
use crate::schedule::{FamilyAction, Realises};

/// An etcd-only fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EtcdAction {
    /// `kill -9` of the leader; once the other members agree on a new one, the killed
    /// member restarts with its data dir. Each new leader restarts every lease's TTL.
    ChurnLeader,
    /// `lease revoke` of the lease of the client queued last for the lock (its key goes
    /// with it), as when that lease expires while its owner waits.
    RevokeLastWaiter,
    /// The leader's host cut off from the other members' (both ways; the clients still
    /// reach it): it cannot commit, and the others elect a new leader. Needs the
    /// cluster's members on hosts of their own. The history names the leader cut off;
    /// the other side is every other member.
    IsolateLeader,
    /// Every cut healed.
    HealIsolation,
}

impl FamilyAction for EtcdAction {
    fn name(&self) -> &'static str {
        match self {
            EtcdAction::ChurnLeader => "churn-leader",
            EtcdAction::RevokeLastWaiter => "revoke-waiter-lease",
            EtcdAction::IsolateLeader => "isolate-leader",
            EtcdAction::HealIsolation => "heal-isolation",
        }
    }

    /// A leader change — killed or cut off — is the model's failover; a revoked
    /// waiter's lease its revoke.
    fn realises(&self) -> Realises {
        match self {
            EtcdAction::ChurnLeader | EtcdAction::IsolateLeader => Realises::Fault(Fault::Failover),
            EtcdAction::RevokeLastWaiter => Realises::Fault(Fault::Revoke),
            EtcdAction::HealIsolation => Realises::Heal,
        }
    }

    /// The heal names what it heals: by then the primary is the new leader.
    fn target_name(&self) -> Option<&'static str> {
        match self {
            EtcdAction::HealIsolation => Some("the first leader | the other members, healed"),
            _ => None,
        }
    }

    fn target(&self) -> Target {
        match self {
            EtcdAction::ChurnLeader | EtcdAction::IsolateLeader | EtcdAction::HealIsolation => {
                Target::Primary
            }
            EtcdAction::RevokeLastWaiter => Target::AnyClient,
        }
    }
}
