//! The faults only Redis has. Cutting replication uses the ACL trick of BACKENDS.md:
//! the master refuses its replicas' `PSYNC`/`SYNC` and drops their links, so a write
//! stays on the master alone — deterministic, no root, healed in under 1.5 s.

use locklab_servers::RedisServer;

use locklab_models::registry::Fault;

use crate::schedule::Target;
use crate::schedule::{FamilyAction, Realises};

/// A Redis-only fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisAction {
    /// Split brain: the master's host cut off (nftables, in the run's lab) from the
    /// Sentinels' and the replicas' hosts; the clients pinned to it still reach it.
    Isolate(Target),
    /// End the isolation: Sentinel turns the old master into a replica of the new.
    HealIsolation(Target),
    /// Stop replication from a master: its replicas' sync is refused and their links
    /// killed (a replica that replicates as its own ACL user is spared).
    CutReplication(Target),
    /// Allow replication again.
    HealReplication(Target),
}

impl FamilyAction for RedisAction {
    /// Cutting replication is how the failover row makes Sentinel promote a replica
    /// that never saw the lock: part of the model's failover; healing it, its end.
    fn realises(&self) -> Realises {
        match self {
            RedisAction::CutReplication(_) => Realises::Fault(Fault::Failover),
            RedisAction::Isolate(_) => Realises::Faults(&[Fault::Split, Fault::Failover]),
            RedisAction::HealReplication(_) | RedisAction::HealIsolation(_) => Realises::Heal,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            RedisAction::CutReplication(_) => "cut-replication",
            RedisAction::HealReplication(_) => "heal-replication",
            RedisAction::Isolate(_) => "isolate",
            RedisAction::HealIsolation(_) => "heal-isolation",
        }
    }

    /// An isolation names both sides: the target alone would name whichever node is
    /// the primary when it runs (after a failover, the new one).
    fn target_name(&self) -> Option<&'static str> {
        match self {
            RedisAction::Isolate(_) => {
                Some("the first master and its pinned client | the replicas and the Sentinels")
            }
            RedisAction::HealIsolation(_) => {
                Some("the first master | the replicas and the Sentinels, healed")
            }
            _ => None,
        }
    }

    fn target(&self) -> Target {
        match self {
            RedisAction::CutReplication(t)
            | RedisAction::HealReplication(t)
            | RedisAction::Isolate(t)
            | RedisAction::HealIsolation(t) => *t,
        }
    }
}

impl RedisAction {
    /// Carries it out on `master`.
    pub fn apply(&self, master: &RedisServer) -> Result<(), String> {
        let (acl, cut) = match self {
            RedisAction::CutReplication(_) => (["-psync", "-sync"], true),
            RedisAction::HealReplication(_) => (["+psync", "+sync"], false),
            RedisAction::Isolate(_) | RedisAction::HealIsolation(_) => {
                return Err("an isolation is the lab's, not the master's".into())
            }
        };
        let answer = master.cli(&["ACL", "SETUSER", "default", acl[0], acl[1]]);
        if answer != "OK" {
            return Err(format!("ACL SETUSER answered {answer:?}"));
        }
        if cut {
            // Only the links of replicas that replicate as `default`: one set apart
            // with its own user keeps replicating.
            master.cli(&["CLIENT", "KILL", "TYPE", "replica", "USER", "default"]);
        }
        Ok(())
    }
}
