//! A nemesis schedule is data: timed fault and heal actions on named targets, written
//! into the history header and drawn from the run's seed, so a run can be repeated.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One thing the nemesis does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "kebab-case")]
pub enum Action {
    /// Graceful shutdown of a server (SIGTERM).
    Stop {
        /// Server name.
        target: String,
    },
    /// `kill -9` of a server.
    Kill {
        /// Server name (`master`, `n2`, …).
        target: String,
    },
    /// SIGSTOP of a server.
    Pause {
        /// Server name.
        target: String,
    },
    /// SIGCONT of a paused server.
    Resume {
        /// Server name.
        target: String,
    },
    /// Start a killed (or running) server again on its port.
    Restart {
        /// Server name.
        target: String,
        /// Keep its data (as with persistence) or start empty.
        keep_data: bool,
    },
    /// Stop replication from a master: its replicas' sync is refused (the ACL trick)
    /// and their links are killed, so writes stay on the master only (a replica that
    /// replicates as its own ACL user is spared).
    CutReplication {
        /// The master.
        target: String,
    },
    /// Allow replication again.
    HealReplication {
        /// The master.
        target: String,
    },
    /// Cut every client from a server: the TCP proxy in front of it drops its
    /// connections and refuses new ones.
    Partition {
        /// Server name.
        target: String,
    },
    /// End a partition.
    HealPartition {
        /// Server name.
        target: String,
    },
    /// Set a server's libfaketime clock (`"+31"`: jump 31 s ahead; `"+0 x2"`: run
    /// twice as fast).
    Clock {
        /// Server name.
        target: String,
        /// The libfaketime offset.
        offset: String,
    },
    /// The next client to reach the middle of its critical section stalls there, as in
    /// a stop-the-world GC pause (its lock's lease keeps running on the server).
    ClientPause {
        /// How long it stalls.
        ms: u64,
    },
}

/// An action at a time after the workload started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Milliseconds after the workload started.
    pub at_ms: u64,
    /// What to do.
    #[serde(flatten)]
    pub action: Action,
}

/// A whole schedule, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The steps.
    pub steps: Vec<Step>,
}

impl Schedule {
    /// Builds a schedule from planned steps, each moved by up to ±`jitter_pct` % of its
    /// gap to the step before, drawn from `seed`: different seeds probe different
    /// timings, one seed always gives the same schedule. The order never changes.
    pub fn jittered(planned: &[(u64, Action)], jitter_pct: u64, seed: u64) -> Schedule {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x006e_656d_6573_6973);
        let mut steps = Vec::with_capacity(planned.len());
        let mut prev_planned = 0u64;
        let mut prev_at = 0u64;
        for (at, action) in planned {
            let gap = at.saturating_sub(prev_planned);
            let spread = gap * jitter_pct / 100;
            let offset = if spread > 0 {
                rng.random_range(0..=2 * spread)
            } else {
                spread
            };
            let shifted = (prev_at + gap + offset).saturating_sub(spread);
            let at_ms = shifted.max(prev_at);
            steps.push(Step {
                at_ms,
                action: action.clone(),
            });
            prev_planned = *at;
            prev_at = at_ms;
        }
        Schedule { steps }
    }

    /// The steps as JSON values, for the history header.
    pub fn to_header(&self) -> Vec<serde_json::Value> {
        self.steps
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Vec<(u64, Action)> {
        vec![
            (
                0,
                Action::CutReplication {
                    target: "master".into(),
                },
            ),
            (
                800,
                Action::Kill {
                    target: "master".into(),
                },
            ),
            (1000, Action::ClientPause { ms: 2000 }),
        ]
    }

    #[test]
    fn one_seed_one_schedule_and_order_is_kept() {
        let a = Schedule::jittered(&plan(), 20, 7);
        assert_eq!(a, Schedule::jittered(&plan(), 20, 7));
        assert!(a.steps.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        assert!((640..=960).contains(&a.steps[1].at_ms), "{a:?}");
        let json = a.to_header();
        assert_eq!(json[1]["fault"], "kill");
        assert_eq!(json[1]["target"], "master");
        assert_eq!(json[2]["ms"], 2000);
    }
}
