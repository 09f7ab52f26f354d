//! A Redis protocol's environments and model: the family's faults one at a time, and
//! the Redis lock model running the protocol's steps.

use crate::checkable::Checkable;
use crate::kernel::Budget;
use crate::progress;
use crate::protocol::by_address::ByAddress;
use crate::protocol::Environment;
use crate::redis::catalog::Sentinel;
use crate::redis::protocol::{Protocol, ValueKind};
use crate::redis::RedisLockModel;
use crate::registry::{Fault, Property};
use crate::scenario::{Build, Params, Scenario};

use super::steps::TokenKind;
use super::RedisProtocol;

/// The environments a Redis protocol is checked in: no fault, then each of the
/// family's faults once; all of the family's lock properties in each.
pub fn environments(p: &RedisProtocol) -> Vec<Environment> {
    let mut properties = vec![
        Property::MutualExclusion,
        Property::NoForeignRelease,
        Property::Liveness,
    ];
    if p.reentrant {
        properties.push(Property::Reentrancy);
    }
    if p.fences() {
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
        env("pause", "holder pause > lease", one(Fault::Pause)),
        env("crash", "client crash", one(Fault::Crash)),
        env(
            "failover",
            "Sentinel promotes a lagging replica",
            Params {
                replicas: 1,
                ..one(Fault::Failover)
            },
        ),
    ]
}

/// The model of `p`, for a scenario (kept for the process's life, as a catalog row's).
pub fn model(p: &RedisProtocol) -> &'static dyn Build {
    let protocol: &'static RedisProtocol = Box::leak(Box::new(p.clone()));
    Box::leak(Box::new(RedisDescribed(protocol)))
}

/// Builds the Redis model of a described protocol.
#[derive(Debug)]
struct RedisDescribed(&'static RedisProtocol);

impl RedisDescribed {
    /// The model at `p`, time running `tail` ticks past its horizon (0 for safety).
    fn model(&self, scenario: &Scenario, p: &Params, tail: u64) -> RedisLockModel {
        RedisLockModel {
            protocol: Protocol::Described(ByAddress(self.0)),
            value: match self.0.token {
                TokenKind::Unique => ValueKind::Unique,
                TokenKind::Timestamp => ValueKind::Timestamp,
                TokenKind::ThreadId => ValueKind::ThreadId,
            },
            clients: p.clients,
            ttl: p.ttl,
            replicas: p.replicas,
            wait: None,
            fencing: self.0.fences(),
            reenters: false,
            faults: Budget::of(&p.faults),
            down_after: Sentinel::of(scenario).down_after,
            min_replicas_lag: Sentinel::of(scenario).min_replicas_lag,
            horizon: match tail == crate::kernel::repeat::FOR_EVER {
                true => crate::kernel::repeat::horizon(&Budget::of(&p.faults), 2 * p.ttl + 1),
                false => 2 * p.ttl + 1,
            },
            tail,
            repeat: tail == crate::kernel::repeat::FOR_EVER,
            properties: scenario.properties,
        }
    }
}

impl Build for RedisDescribed {
    fn build(&self, scenario: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(self.model(scenario, p, 0))
    }

    fn with_tail(
        &self,
        scenario: &Scenario,
        p: &Params,
        tail: u64,
    ) -> Option<Box<dyn progress::Judge>> {
        Some(Box::new(self.model(scenario, p, tail)))
    }

    fn repeating(&self, scenario: &Scenario, p: &Params) -> Option<Box<dyn progress::Judge>> {
        let m = self.model(scenario, p, crate::kernel::repeat::FOR_EVER);
        m.can_repeat()
            .then(|| Box::new(m) as Box<dyn progress::Judge>)
    }
}
