//! An etcd protocol's environments and model: the family's faults one at a time, and
//! the etcd lock model running the protocol's requests.

use crate::etcd::catalog::EtcdLock;
use crate::etcd::model::{Lock, Work};
use crate::protocol::by_address::ByAddress;
use crate::protocol::Environment;
use crate::registry::{Fault, Property};
use crate::scenario::{Build, Params};

use super::EtcdProtocol;

/// The environments an etcd protocol is checked in: no fault, then each of the
/// family's faults once (a lost release reply among three clients, as the catalog's
/// `etcd-unlock-retry` stages it); all of the family's lock properties in each.
pub fn environments(p: &EtcdProtocol) -> Vec<Environment> {
    let mut properties = vec![
        Property::MutualExclusion,
        Property::NoForeignRelease,
        Property::Liveness,
    ];
    if p.fencing {
        properties.push(Property::ResourceSafety);
    }
    let env = |name: &str, faults: &str, params: Params| Environment {
        name: name.to_string(),
        faults: faults.to_string(),
        params,
        properties: properties.clone(),
    };
    let one = |f: Fault| Params::BASE.with_faults(&[(f, 1)]);
    vec![
        env("none", "none", Params::BASE),
        env(
            "pause",
            "holder pause (keep-alives too) > lease TTL",
            one(Fault::Pause),
        ),
        env("crash", "client crash", one(Fault::Crash)),
        env(
            "partition",
            "holder partitioned from the cluster > lease TTL",
            one(Fault::Partition),
        ),
        env(
            "failover",
            "the leader killed; the new one restarts every lease's TTL",
            one(Fault::Failover),
        ),
        env(
            "drop",
            "a release's reply lost (the client sends it again)",
            Params {
                clients: 3,
                ..one(Fault::Drop)
            },
        ),
    ]
}

/// The model of `p`, for a scenario (kept for the process's life, as a catalog row's).
pub fn model(p: &EtcdProtocol) -> &'static dyn Build {
    let protocol: &'static EtcdProtocol = Box::leak(Box::new(p.clone()));
    let work = if p.fencing {
        Work::Fenced
    } else {
        Work::Outside
    };
    Box::leak(Box::new(EtcdLock::new(
        Lock::Described(ByAddress(protocol)),
        work,
    )))
}
