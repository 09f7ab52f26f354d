//! The faults only etcd has. The rows that run so far need none: a holder's pause and
//! crash, a member's kill and restart are the generic ones, and the leader is the
//! cluster's primary. The type exists because a [`crate::cluster::Cluster`] names one.

use crate::cluster::{FamilyAction, Target};

/// An etcd-only fault (none yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EtcdAction {}

impl FamilyAction for EtcdAction {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn target(&self) -> Target {
        match *self {}
    }
}
