//! The ZooKeeper rows of the catalog as run plans, on a real 3-server ensemble. Clients
//! ask for a 2 s session (the servers allow 1–10 s with their 500 ms tick), each writes
//! the recipe as the row's model does ([`Recipe`]), and every fault that must hit a
//! holder waits for the event that opens its window ("after some client entered its
//! section"), so it reproduces on every run.

use locklab_models::zk::{Recipe, WatchOn};

use super::actions::ZkAction;
use super::cluster::Shape;
use super::family::Zk;
use super::locks::{Work, ZkLock};
use crate::plan::{Plan, Planned};
use crate::schedule::Target::{AnyClient, Primary};
use crate::schedule::{Action, Step, When};
use locklab_models::registry::Fault;
use locklab_models::registry::ScenarioId;

type ZkPlan = Plan<Zk>;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 15_000;

/// The session timeout clients ask for (ms).
const SESSION_MS: u64 = 2_000;

/// The session of `zk-leader-isolated`: past the ensemble's 2.5 s to notice a lost
/// leader, plus an election.
const ISOLATED_SESSION_MS: u64 = 6_000;

/// The leader's clock in `zk-clock-jump`: 3 s ahead (past a 2 s session), and ten
/// times fast after. A bare leap expires only the sessions that did not ping between
/// it and the leader's next expiry round (every tick): the holder's or not, both seen
/// here. Running fast, the clock times out every session that does not ping within a
/// tenth of its timeout, the holder's surely, so the run shows what the model finds.
const LEAP: &str = "+3 x10";

/// Curator's recipe as its documentation asks it used: the owner id in the node name,
/// the predecessor watched, SUSPENDED treated as lost.
const CURATOR: Recipe = Recipe::CURATOR;

fn after_entry(delay_ms: u64, action: Action<ZkAction>) -> Step<ZkAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

fn plan(
    id: ScenarioId,
    recipe: Recipe,
    work: Work,
    faults: Vec<Step<ZkAction>>,
    story: &'static str,
) -> ZkPlan {
    Plan {
        id,
        shape: Shape::Three,
        lock: ZkLock {
            session_ms: SESSION_MS,
            recipe,
            work,
        },
        ttl_ms: SESSION_MS,
        work_ms: 60,
        overlap_within_ms: None,
        clients: 3,
        duration_ms: 8_000,
        client_delay_ms: 0,
        fake_clock: false,
        beyond_model: None,
        faults,
        story,
    }
}

/// The first holder stops (its pings too: its own proxies are cut) for 5 s, well past
/// its 2 s session.
fn paused(id: ScenarioId, work: Work, story: &'static str) -> ZkPlan {
    plan(
        id,
        CURATOR,
        work,
        vec![after_entry(
            0,
            Action::pause_until_another(AnyClient, 5_000),
        )],
        story,
    )
}

/// Every ZooKeeper scenario `locklab run` can run.
pub fn plans() -> Vec<ZkPlan> {
    vec![
        paused(
            ScenarioId::ZkSequentialPause,
            Work::Unfenced,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter checks no token",
        ),
        paused(
            ScenarioId::ZkSequentialFenced,
            Work::Fenced,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter checks the lock node's czxid as a fencing token",
        ),
        paused(
            ScenarioId::ZkCheckWrite,
            Work::MultiChecked,
            "the first holder stops mid-section for 5 s, its pings too (2 s session); the counter is a ZooKeeper node written as multi(check(lock node), setData(/counter))",
        ),
        plan(
            ScenarioId::ZkSequential,
            CURATOR,
            Work::Unfenced,
            vec![after_entry(0, Action::client(Fault::Crash, AnyClient, 0))],
            "the first holder crashes inside its section; its session expires, its node with it, and the lock is free again",
        ),
        ZkPlan {
            // The holder works on through the leap, so a session expired under it
            // shows as a second holder.
            work_ms: 1_500,
            fake_clock: true,
            ..plan(
                ScenarioId::ZkClockJump,
                CURATOR,
                Work::Unfenced,
                vec![after_entry(
                    300,
                    Action::Clock {
                        target: Primary,
                        offset: LEAP.into(),
                    },
                )],
                "300 ms into the first section the leader's clock (libfaketime, the monotonic clock its session tracker reads included) leaps 3 s ahead and runs ten times fast from then on; the holder works 1.5 s",
            )
        },
        ZkPlan {
            // Four sessions of quiet after the hang are what a run calls stuck.
            duration_ms: 10_000,
            ..plan(
                ScenarioId::ZkHungWorker,
                CURATOR,
                Work::Unfenced,
                vec![after_entry(0, Action::client(Fault::Hang, AnyClient, 0))],
                "the first holder's worker hangs inside its section for the rest of the run while its process, and the pings of its 2 s session, run on",
            )
        },
        plan(
            ScenarioId::ZkUntilLost,
            Recipe {
                stop_at_suspended: false,
                ..CURATOR
            },
            Work::Unfenced,
            vec![after_entry(
                0,
                Action::client(Fault::Partition, AnyClient, 5_000),
            )],
            "the first holder is cut off from the ensemble mid-section for 5 s (2 s session) and works on until its client says the session is lost, not when it says disconnected",
        ),
        ZkPlan {
            // Long enough to watch the lock stuck for 4 sessions after the lost reply.
            duration_ms: 10_000,
            ..plan(
                ScenarioId::ZkCreateConnLoss,
                Recipe {
                    protected: false,
                    ..CURATOR
                },
                Work::Unfenced,
                // Armed once the lock works (so the run shows sections to check): the
                // next create, a client joining the queue again, loses its reply.
                vec![Step {
                    when: When::after(crate::schedule::Event::FirstGrant, EVENT_TIMEOUT_MS),
                    action: Action::Family(ZkAction::LoseCreateReply),
                }],
                "after the first grant, the next create's reply is lost (the client's proxy drops the connection after forwarding it); the client retries the create blindly, with no owner id in the node name",
            )
        },
        ZkPlan {
            clients: 9,
            duration_ms: 6_000,
            ..plan(
                ScenarioId::ZkHerd,
                Recipe {
                    watch_on: WatchOn::Parent,
                    ..CURATOR
                },
                Work::Unfenced,
                Vec::new(),
                "no fault; 9 clients, every waiter watching /lock's children instead of its predecessor",
            )
        },
        ZkPlan {
            clients: 5,
            duration_ms: 5_000,
            ..plan(
                ScenarioId::ZkPlainZnode,
                Recipe {
                    sequential: false,
                    ..CURATOR
                },
                Work::Unfenced,
                Vec::new(),
                "no fault; 5 clients creating the one node /lock/holder, each waiter watching it and creating again when it goes",
            )
        },
        ZkPlan {
            // The servers notice a lost leader only after syncLimit ticks (2.5 s here)
            // and the clients attached to it are dropped then: sessions must outlive
            // that and an election, as ZooKeeper's guide says they should. With the
            // other rows' 2 s sessions every such session expired (measured), which
            // the model's leader change does not do. The holder works through the
            // whole cut, so that a session lost to it would show as a second holder.
            shape: Shape::ThreeOnHosts {
                session_ms: ISOLATED_SESSION_MS,
            },
            lock: ZkLock {
                recipe: CURATOR,
                session_ms: ISOLATED_SESSION_MS,
                work: Work::Unfenced,
            },
            ttl_ms: ISOLATED_SESSION_MS,
            work_ms: 2_500,
            duration_ms: 12_000,
            ..plan(
                ScenarioId::ZkLeaderIsolated,
                CURATOR,
                Work::Unfenced,
                vec![
                    after_entry(300, Action::Family(ZkAction::IsolateLeader)),
                    after_entry(3_000, Action::Family(ZkAction::HealIsolation)),
                ],
                "300 ms into the first section the leader's host is cut off from the other two servers' (network namespaces, nftables; the clients still reach it); they elect a new leader; the cut heals 3 s later; the holder works 2.5 s",
            )
        },
    ]
}

/// `id`'s plan with the ensemble's leader killed (`kill -9`) 300 ms after the first
/// client entered its section, and started again with its data 2 s later: the run must
/// reach the same verdict through the election.
pub fn with_leader_killed(id: ScenarioId) -> Option<ZkPlan> {
    let mut p = plans().into_iter().find(|p| p.id == id)?;
    p.faults.push(after_entry(300, Action::Kill(Primary)));
    p.faults.push(Step {
        when: When::After {
            event: crate::schedule::Event::FirstGrant,
            delay_ms: 2_000,
            timeout_ms: EVENT_TIMEOUT_MS,
        },
        action: Action::Family(ZkAction::RestartKilled),
    });
    p.story = "the plan's faults, and the ensemble's leader killed (kill -9) 300 ms after the first entry and restarted with its data 2 s later";
    Some(p)
}

impl Planned for Zk {
    fn plans() -> Vec<Plan<Self>> {
        plans()
    }
}
