//! The etcd rows of the catalog as run plans, on a real 3-node cluster. The session
//! lease has etcd's TTL of 2 s (whole seconds; the keep-alives restart it every third of
//! that), and every fault that must hit a holder waits for the event that opens its
//! window ("after some client entered its section"), so it reproduces on every run.

use super::actions::EtcdAction;
use super::cluster::{EtcdRunCluster, Shape};
use super::locks::{EtcdLock, Work};
use crate::cluster::Target::AnyClient;
use crate::plan::Plan;
use crate::schedule::{Action, Step};

type EtcdPlan = Plan<EtcdRunCluster>;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

/// The session lease's TTL (s): twice etcd's least here, so a busy machine's late
/// keep-alive does not lose a lease nobody meant to lose.
const TTL_S: u64 = 2;

fn after_entry(delay_ms: u64, action: Action<EtcdAction>) -> Step<EtcdAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

fn recipe(
    id: &'static str,
    work: Work,
    faults: Vec<Step<EtcdAction>>,
    story: &'static str,
) -> EtcdPlan {
    Plan {
        id,
        shape: Shape::Three,
        lock: EtcdLock { ttl_s: TTL_S, work },
        ttl_ms: TTL_S * 1_000,
        work_ms: 60,
        clients: 3,
        duration_ms: 7_000,
        client_delay_ms: 0,
        fake_clock: false,
        faults,
        story,
    }
}

/// The first holder stops (keep-alives included) for 5 s, well past its 2 s lease and
/// etcd's expiry sweep.
fn paused(id: &'static str, work: Work, story: &'static str) -> EtcdPlan {
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

/// Every etcd scenario `locklab run` can run.
pub fn plans() -> Vec<EtcdPlan> {
    vec![
        paused(
            "etcd-lease-pause",
            Work::Unfenced,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter checks no token (Jepsen's lock-set)",
        ),
        paused(
            "etcd-lease-fenced",
            Work::Fenced,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter checks the lock key's create revision as a fencing token",
        ),
        paused(
            "etcd-txn-guarded",
            Work::TxnGuarded,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter is an etcd key written by a Txn guarded by the lock key's create revision (Jepsen's lock-etcd-set)",
        ),
        recipe(
            "etcd-lease-crash",
            Work::Unfenced,
            vec![after_entry(0, Action::ClientCrash(AnyClient))],
            "the first holder crashes inside its section (its keep-alives die with it); the lock is free again once its 2 s lease expires",
        ),
    ]
}
