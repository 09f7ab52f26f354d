//! A Redlock protocol's environments and model: the Redlock family's faults one at a
//! time over five nodes, and the Redlock model sending the protocol's steps.

use crate::checkable::Checkable;
use crate::progress;
use crate::protocol::Environment;
use crate::redlock::catalog::{Redlock, Restart};
use crate::registry::{Fault, Property, ScenarioId};
use crate::scenario::{Build, Params, Scenario};

use super::RedlockProtocol;

/// The environment whose crashed nodes stay down a TTL (as the catalog's
/// `redlock-delayed-restart`).
const DELAYED: &str = "delayed-restart";

/// The environments a Redlock protocol is checked in, over five nodes: no fault, a
/// node restarting empty (at once, or after a TTL), a node's clock jumping, a client
/// paused; mutual exclusion in each (a Redlock has no resource behind it here).
pub fn environments(_: &RedlockProtocol) -> Vec<Environment> {
    let five = Params {
        nodes: 5,
        ..Params::BASE
    };
    let env = |name: &str, faults: &str, f: Option<Fault>| Environment {
        name: name.to_string(),
        faults: faults.to_string(),
        params: match f {
            Some(f) => five.clone().with_faults(&[(f, 1)]),
            None => five.clone(),
        },
        properties: vec![Property::MutualExclusion],
    };
    vec![
        env("none", "none", None),
        env(
            "restart",
            "node crash + restart without persistence",
            Some(Fault::Restart),
        ),
        env(
            DELAYED,
            "node crash + restart after a TTL",
            Some(Fault::Restart),
        ),
        env("clock-jump", "clock jump on one node", Some(Fault::Jump)),
        env("pause", "client pause > validity", Some(Fault::Pause)),
    ]
}

/// The model of `p`, for a scenario (kept for the process's life, as a catalog row's).
pub fn model(p: &RedlockProtocol) -> &'static dyn Build {
    let protocol: &'static RedlockProtocol = Box::leak(Box::new(p.clone()));
    Box::leak(Box::new(RedlockDescribed(protocol)))
}

/// Builds the Redlock model of a described protocol.
#[derive(Debug)]
struct RedlockDescribed(&'static RedlockProtocol);

impl RedlockDescribed {
    /// How crashed nodes restart in `scenario`: after a TTL in the delayed environments
    /// (this file's, or the catalog row's, whose id the scenario ends with), at once
    /// elsewhere.
    fn restart(scenario: &Scenario) -> Redlock {
        let env = scenario.id.environment().unwrap_or("");
        let delayed = env == DELAYED || env == ScenarioId::RedlockDelayedRestart.name();
        Redlock {
            restart: if delayed {
                Restart::AfterTtl
            } else {
                Restart::Immediate
            },
        }
    }
}

impl Build for RedlockDescribed {
    fn build(&self, scenario: &Scenario, p: &Params) -> Box<dyn Checkable> {
        Box::new(Self::restart(scenario).described(self.0, p, 0))
    }

    fn with_tail(
        &self,
        scenario: &Scenario,
        p: &Params,
        tail: u64,
    ) -> Option<Box<dyn progress::Judge>> {
        Some(Box::new(Self::restart(scenario).described(self.0, p, tail)))
    }
}
