//! The ZooKeeper rows of the catalog as run plans, on a real 3-server ensemble. Clients
//! ask for a 2 s session (the servers allow 1–10 s with their 500 ms tick), and every
//! fault that must hit a holder waits for the event that opens its window ("after some
//! client entered its section"), so it reproduces on every run.

use super::actions::ZkAction;
use super::cluster::{Shape, ZkRunCluster};
use super::locks::{Work, ZkLock};
use crate::cluster::Target::AnyClient;
use crate::plan::Plan;
use crate::schedule::{Action, Step};

type ZkPlan = Plan<ZkRunCluster>;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 15_000;

/// The session timeout clients ask for (ms).
const SESSION_MS: u64 = 2_000;

fn after_entry(delay_ms: u64, action: Action<ZkAction>) -> Step<ZkAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

fn recipe(
    id: &'static str,
    work: Work,
    faults: Vec<Step<ZkAction>>,
    story: &'static str,
) -> ZkPlan {
    Plan {
        id,
        shape: Shape::Three,
        lock: ZkLock {
            session_ms: SESSION_MS,
            work,
        },
        ttl_ms: SESSION_MS,
        work_ms: 60,
        clients: 3,
        duration_ms: 8_000,
        client_delay_ms: 0,
        fake_clock: false,
        faults,
        story,
    }
}

/// The first holder stops (its pings too: its own proxies are cut) for 5 s, well past
/// its 2 s session.
fn paused(id: &'static str, work: Work, story: &'static str) -> ZkPlan {
    recipe(
        id,
        work,
        vec![after_entry(
            0,
            Action::ClientPause {
                target: AnyClient,
                ms: 5_000,
            },
        )],
        story,
    )
}

/// Every ZooKeeper scenario `locklab run` can run.
pub fn plans() -> Vec<ZkPlan> {
    vec![
        paused(
            "zk-sequential-pause",
            Work::Unfenced,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter checks no token",
        ),
        paused(
            "zk-sequential-fenced",
            Work::Fenced,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter checks the lock node's czxid as a fencing token",
        ),
        paused(
            "zk-check-write",
            Work::MultiChecked,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter is a ZooKeeper node written as multi(check(lock node), setData(/counter))",
        ),
        recipe(
            "zk-sequential",
            Work::Unfenced,
            vec![after_entry(0, Action::ClientCrash(AnyClient))],
            "the first holder crashes inside its section; its session, and its node with it, ends (closed or expired) and the lock is free again",
        ),
    ]
}
