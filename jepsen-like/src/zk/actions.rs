//! The faults only ZooKeeper has. The rows that run so far need none: a holder's pause
//! (its own proxies cut) and crash are the generic client faults. The type exists
//! because a [`crate::cluster::Cluster`] names one.

use crate::cluster::{FamilyAction, Target};

/// A ZooKeeper-only fault (none yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZkAction {}

impl FamilyAction for ZkAction {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn target(&self) -> Target {
        match *self {}
    }
}
