//! The etcd rows of the catalog as run plans, on a real 3-node cluster. The session
//! lease has etcd's TTL of 2 s (whole seconds; the keep-alives restart it every third of
//! that), and every fault that must hit a holder waits for the event that opens its
//! window ("after some client entered its section"), so it reproduces on every run.

use super::actions::EtcdAction;
use super::cluster::Shape;
use super::family::Etcd;
use super::locks::{EtcdLock, Kind, Work};
use crate::plan::{Plan, Planned};
use crate::schedule::Target::AnyClient;
use crate::schedule::{Action, Step};
use locklab_models::registry::Fault;
use locklab_models::registry::ScenarioId;

type EtcdPlan = Plan<Etcd>;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

/// The session lease's TTL (s): twice etcd's least here, so a busy machine's late
/// keep-alive does not lose a lease nobody meant to lose.
const TTL_S: u64 = 2;

fn after_entry(delay_ms: u64, action: Action<EtcdAction>) -> Step<EtcdAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

fn plan(
    id: ScenarioId,
    kind: Kind,
    work: Work,
    faults: Vec<Step<EtcdAction>>,
    story: &'static str,
) -> EtcdPlan {
    Plan {
        id,
        shape: Shape::Three,
        lock: EtcdLock {
            kind,
            ttl_s: TTL_S,
            work,
        },
        ttl_ms: TTL_S * 1_000,
        work_ms: 60,
        overlap_within_ms: None,
        clients: 3,
        duration_ms: 7_000,
        client_delay_ms: 0,
        fake_clock: false,
        beyond_model: None,
        faults,
        story,
    }
}

fn recipe(
    id: ScenarioId,
    work: Work,
    faults: Vec<Step<EtcdAction>>,
    story: &'static str,
) -> EtcdPlan {
    plan(id, Kind::Recipe, work, faults, story)
}

/// The first holder stops (keep-alives included) for 5 s, well past its 2 s lease and
/// etcd's expiry sweep.
fn paused(id: ScenarioId, work: Work, story: &'static str) -> EtcdPlan {
    recipe(
        id,
        work,
        vec![after_entry(
            0,
            Action::pause_until_another(AnyClient, 5_000),
        )],
        story,
    )
}

/// The first holder's release reaches etcd and its reply is lost; the release is sent
/// again 200 ms after the failure. Sections last 1 s, so the next holder is inside when
/// the retry arrives.
fn unlock_retry(id: ScenarioId, guarded_release: bool, story: &'static str) -> EtcdPlan {
    EtcdPlan {
        work_ms: 1_000,
        ..plan(
            id,
            Kind::SingleKey { guarded_release },
            Work::Unfenced,
            vec![after_entry(0, Action::client(Fault::Drop, AnyClient, 0))],
            story,
        )
    }
}

/// Every etcd scenario `locklab run` can run.
pub fn plans() -> Vec<EtcdPlan> {
    vec![
        paused(
            ScenarioId::EtcdLeasePause,
            Work::Unfenced,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter checks no token (Jepsen's lock-set)",
        ),
        paused(
            ScenarioId::EtcdLeaseFenced,
            Work::Fenced,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter checks the lock key's create revision as a fencing token",
        ),
        paused(
            ScenarioId::EtcdTxnGuarded,
            Work::TxnGuarded,
            "the first holder stops mid-section for 5 s, its lease keep-alives too (2 s lease); the counter is an etcd key written by a Txn guarded by the lock key's create revision (Jepsen's lock-etcd-set)",
        ),
        recipe(
            ScenarioId::EtcdLeaseCrash,
            Work::Unfenced,
            vec![after_entry(0, Action::client(Fault::Crash, AnyClient, 0))],
            "the first holder crashes inside its section (its keep-alives die with it); the lock is free again once its 2 s lease expires",
        ),
        EtcdPlan {
            // Four leases of quiet after the hang are what a run calls stuck.
            duration_ms: 10_000,
            ..recipe(
                ScenarioId::EtcdHungWorker,
                Work::Unfenced,
                vec![after_entry(0, Action::client(Fault::Hang, AnyClient, 0))],
                "the first holder's worker hangs inside its section for the rest of the run while its process, and the keep-alives of its 2 s lease, run on",
            )
        },
        recipe(
            ScenarioId::EtcdLeasePartition,
            Work::Unfenced,
            vec![after_entry(
                0,
                Action::client(Fault::Partition, AnyClient, 5_000),
            )],
            "the first holder is cut off from every member (its own proxies) for 5 s mid-section and works on; its keep-alives fail, its 2 s lease expires",
        ),
        unlock_retry(
            ScenarioId::EtcdUnlockRetry,
            false,
            "the reply to the first holder's del lock is lost (the delete took effect); 200 ms after the failure it sends del lock again, when the key is the next holder's",
        ),
        unlock_retry(
            ScenarioId::EtcdUnlockRetryGuarded,
            true,
            "the reply to the first holder's guarded delete is lost (it took effect); 200 ms later it sends it again: txn if create_revision(lock) = mine then del lock",
        ),
        EtcdPlan {
            duration_ms: 10_000,
            ..recipe(
                ScenarioId::EtcdLeaderChurn,
                Work::Unfenced,
                vec![
                    after_entry(0, Action::client(Fault::Crash, AnyClient, 0)),
                    after_entry(500, Action::Family(EtcdAction::ChurnLeader)),
                    after_entry(700, Action::Family(EtcdAction::ChurnLeader)),
                ],
                "the first holder crashes inside its section; then the leader is killed (kill -9) and restarted with its data twice, each new leader restarting every lease's 2 s TTL",
            )
        },
        EtcdPlan {
            // The holder works through the whole cut, so that a lease lost to it would
            // show as a second holder.
            shape: Shape::ThreeOnHosts,
            work_ms: 2_500,
            duration_ms: 8_000,
            ..recipe(
                ScenarioId::EtcdLeaderIsolated,
                Work::Unfenced,
                vec![
                    after_entry(300, Action::Family(EtcdAction::IsolateLeader)),
                    after_entry(3_000, Action::Family(EtcdAction::HealIsolation)),
                ],
                "300 ms into the first section the leader's host is cut off from the other two members' (network namespaces, nftables; the clients still reach it); they elect a new leader; the cut heals 3 s later; the holder works 2.5 s",
            )
        },
        EtcdPlan {
            work_ms: 1_000,
            duration_ms: 6_000,
            ..plan(
                ScenarioId::EtcdLockExpiredWaiter,
                Kind::LockRpc,
                Work::Unfenced,
                vec![after_entry(
                    300,
                    Action::Family(EtcdAction::RevokeLastWaiter),
                )],
                "clients lock with etcd's Lock RPC; 300 ms into the first section the lease of the client queued last is revoked (its key goes), as when it expires while it waits",
            )
        },
    ]
}

impl Planned for Etcd {
    fn plans() -> Vec<Plan<Self>> {
        plans()
    }
}
