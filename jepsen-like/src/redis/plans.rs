//! The Redis and Redlock rows of the catalog as run plans: the servers, the lock, the
//! workload's timing and the faults. Faults that must hit a window wait for the event
//! that opens it ("after the first grant", "after the master has the key"), so they
//! reproduce on every run rather than when the workload happens to be on time.

use super::actions::RedisAction;
use super::cluster::{Shape, SplitBrain};
use super::locks::RedisLock;
use super::Redis;
use crate::plan::{Plan, Planned};
use crate::schedule::Target::{self, AnyClient, Node, Primary};
use crate::schedule::{Action, Event, Step, When};
use locklab_models::registry::Fault;
use locklab_models::registry::ScenarioId;

type RedisPlan = Plan<Redis>;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

fn at(ms: u64, action: Action<RedisAction>) -> Step<RedisAction> {
    Step {
        when: When::At(ms),
        action,
    }
}

fn after(event: Event, delay_ms: u64, action: Action<RedisAction>) -> Step<RedisAction> {
    Step {
        when: When::after_by(event, delay_ms, EVENT_TIMEOUT_MS),
        action,
    }
}

fn single(id: ScenarioId, lock: RedisLock) -> RedisPlan {
    Plan {
        id,
        shape: Shape::Single,
        lock,
        ttl_ms: 2_000,
        work_ms: 40,
        overlap_within_ms: None,
        clients: 4,
        duration_ms: 4_000,
        client_delay_ms: 0,
        fake_clock: false,
        beyond_model: None,
        faults: Vec::new(),
        story: "no fault: clients contend for the lock",
    }
}

/// A holder stalls mid-section longer than its lease, twice.
fn paused(id: ScenarioId, lock: RedisLock, story: &'static str) -> RedisPlan {
    let pause = |ms| Action::pause_until_another(AnyClient, ms);
    Plan {
        ttl_ms: 500,
        work_ms: 60,
        duration_ms: 5_000,
        faults: vec![at(600, pause(1_500)), at(2_800, pause(1_500))],
        story,
        ..single(id, lock)
    }
}

/// A holder dies with the lock; the rest of the run shows whether anyone gets it again.
fn crashed(
    id: ScenarioId,
    lock: RedisLock,
    faults: Vec<Step<RedisAction>>,
    story: &'static str,
) -> RedisPlan {
    Plan {
        // The lease the clients ask for: the liveness observation is counted in it.
        ttl_ms: 500,
        duration_ms: 4_000,
        faults,
        story,
        ..single(id, lock)
    }
}

fn cut(target: Target) -> Action<RedisAction> {
    Action::Family(RedisAction::CutReplication(target))
}

fn failover(id: ScenarioId, lock: RedisLock, story: &'static str) -> RedisPlan {
    Plan {
        id,
        shape: Shape::Sentinel {
            replicas: 1,
            replica1_apart: false,
            split: None,
        },
        lock,
        ttl_ms: 30_000,
        // Long enough to span Sentinel's failover (2.2–3.2 s after the kill on a quiet
        // machine); on a loaded one the first holder stays on until the next gets in,
        // inside its 30 s lease.
        work_ms: 8_000,
        overlap_within_ms: Some(20_000),
        clients: 3,
        duration_ms: 9_000,
        client_delay_ms: 300,
        fake_clock: false,
        beyond_model: None,
        // The kill waits for the first holder's key on the master (and only there:
        // replication is cut), so no run can miss the window.
        faults: vec![
            at(0, cut(Primary)),
            after(Event::KeyOn(Primary), 100, Action::Kill(Primary)),
        ],
        story,
    }
}

/// Split brain, with no process killed: the master's host cut off from the Sentinels'
/// and the replica's (c0 pinned to the master, still reaching it; the other clients
/// cut off from it), Sentinel promotes the replica after its down-after (1 s), the
/// other clients follow it; the cut heals 1.5 s after the promotion. c0 works long
/// enough that it is still inside when another client gets in on the new master.
fn split_brain(
    id: ScenarioId,
    replicas: usize,
    min_replicas_lag_s: Option<u32>,
    story: &'static str,
) -> RedisPlan {
    Plan {
        id,
        shape: Shape::Sentinel {
            replicas,
            replica1_apart: false,
            split: Some(SplitBrain {
                pinned: 0,
                min_replicas_lag_s,
            }),
        },
        lock: RedisLock::Lua,
        ttl_ms: 30_000,
        work_ms: 9_000,
        overlap_within_ms: Some(20_000),
        clients: 2,
        duration_ms: 12_000,
        client_delay_ms: 300,
        fake_clock: false,
        beyond_model: None,
        faults: vec![
            at(0, Action::Family(RedisAction::Isolate(Primary))),
            // The clients outside the cut lose the master too (the proxy that follows
            // Sentinel): they reach the next one once Sentinel names it.
            at(0, Action::Partition(Primary)),
            after(
                Event::FailedOver,
                1_500,
                Action::Family(RedisAction::HealIsolation(Primary)),
            ),
        ],
        story,
    }
}

fn redlock(id: ScenarioId, faults: Vec<Step<RedisAction>>, story: &'static str) -> RedisPlan {
    Plan {
        id,
        shape: Shape::Redlock {
            nodes: 5,
            aof: false,
        },
        lock: RedisLock::Redlock,
        ttl_ms: 10_000,
        work_ms: 40,
        overlap_within_ms: None,
        clients: 3,
        duration_ms: 4_000,
        client_delay_ms: 200,
        fake_clock: false,
        beyond_model: None,
        faults,
        story,
    }
}

/// The first holder gets a bare majority (n0–n2) while n3 and n4 are cut off; they
/// come back as soon as it is granted; `then` (each delay counted from the step
/// before) makes n2 forget.
fn redlock_bare_majority(then: Vec<(u64, Action<RedisAction>)>) -> Vec<Step<RedisAction>> {
    let mut f = vec![
        at(0, Action::Partition(Node(3))),
        at(0, Action::Partition(Node(4))),
        after(Event::FirstGrant, 0, Action::HealPartition(Node(3))),
        after(Event::FirstGrant, 0, Action::HealPartition(Node(4))),
    ];
    f.extend(
        then.into_iter()
            .map(|(delay, action)| after(Event::FirstGrant, delay, action)),
    );
    f
}

/// After the first holder's bare majority, n2 is killed (`kill -9`) 200 ms in and
/// started again `down_ms` later, empty or on its data dir.
fn n2_killed_and_restarted(down_ms: u64, keep_data: bool) -> Vec<Step<RedisAction>> {
    redlock_bare_majority(vec![
        (200, Action::Kill(Node(2))),
        (
            down_ms,
            Action::Restart {
                target: Node(2),
                keep_data,
            },
        ),
    ])
}

/// Every Redis and Redlock scenario `locklab run` can run.
pub fn plans() -> Vec<RedisPlan> {
    vec![
        Plan {
            story: "no fault: clients contend; 5 ms between each GET and its SET, as a network round trip would",
            ..single(ScenarioId::RedisGetSet, RedisLock::GetSet { gap_ms: 5 })
        },
        crashed(
            ScenarioId::RedisSetnxNoTtl,
            RedisLock::SetNxNoTtl,
            vec![after(Event::Entered(AnyClient), 0, Action::client(Fault::Crash, AnyClient, 0))],
            "the first holder crashes inside its section; the lock has no TTL",
        ),
        Plan {
            // c0 may win its second SETNX only after a few rounds: room to watch after.
            duration_ms: 6_000,
            ..crashed(
                ScenarioId::RedisSetnxExpire,
                // Its second: the run has seen sections (and mutual exclusion kept)
                // before the lock gets stuck.
                RedisLock::SetNxExpire {
                    crashing: Some(0),
                    at_win: 2,
                },
                Vec::new(),
                "c0 crashes right after its second SETNX that wins, before its EXPIRE",
            )
        },
        Plan {
            // The stalled holder's release shows the ABA only if someone holds the lock
            // when it lands: with 60 ms sections the lock was free for the few ms
            // between holders about one time in fifteen, and a run (seed 8, and one CI
            // run) missed it at both stalls; 200 ms sections make that one in fifty.
            work_ms: 200,
            ..paused(
                ScenarioId::RedisTimestampValue,
                RedisLock::TimestampValueOneTick,
                "every grant falls in one millisecond (one timestamp); the holder stalls 1.5 s mid-section with a 0.5 s lease (twice)",
            )
        },
        paused(
            ScenarioId::RedisDelUnconditional,
            RedisLock::DelUnconditional,
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice), then DELs whatever lock is there",
        ),
        Plan {
            ttl_ms: 500,
            work_ms: 40,
            story: "every release pauses 1 s (twice its 0.5 s lease) between its GET, which finds its own value, and its DEL, which by then removes whoever holds the lock",
            ..single(
                ScenarioId::RedisGetThenDel,
                RedisLock::GetThenDel {
                    pause_before_del_ms: 1_000,
                },
            )
        },
        single(ScenarioId::RedisLua, RedisLock::Lua),
        paused(
            ScenarioId::RedisLuaPause,
            RedisLock::Lua,
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice)",
        ),
        paused(
            ScenarioId::RedisLuaFenced,
            RedisLock::Fenced,
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice); the resource checks fencing tokens",
        ),
        single(ScenarioId::RedisReentrant, RedisLock::Reentrant),
        Plan {
            ttl_ms: 500,
            story: "no fault: every section calls lock() again on the lock it holds (a nested method) and waits for it as the outer call did; the lease is 0.5 s",
            ..single(ScenarioId::RedisLuaReentry, RedisLock::LuaNested)
        },
        crashed(
            ScenarioId::RedisReentrantHung,
            RedisLock::ReentrantWatchdog,
            vec![after(Event::Entered(AnyClient), 0, Action::client(Fault::Hang, AnyClient, 0))],
            "the first holder's worker hangs inside its section for the rest of the run while its process, and the watchdog renewing its 0.5 s lease, run on",
        ),
        paused(
            ScenarioId::RedisReentrantPause,
            RedisLock::Reentrant,
            "the holder stalls 1.5 s mid-section with a 0.5 s lease and nothing renews it (a stop-the-world pause stalls the watchdog too), twice",
        ),
        Plan {
            // The model needs no fault: every client is "thread 1", so another client
            // re-enters the holder's hold. A history cannot tell whose hold a release
            // removes when every client is one owner to the server; a holder stalled
            // past its lease makes it show.
            beyond_model: Some("a holder stalled past its lease, so that whose hold a release removes shows in the history: to the server every client is one owner"),
            ..paused(
                ScenarioId::RedisReentrantThreadId,
                RedisLock::ReentrantThreadId,
                "every client is \"thread 1\" with no process UUID; a holder stalls 1.5 s past its 0.5 s lease (twice), so whose hold a release removes shows",
            )
        },
        failover(
            ScenarioId::RedisFailover,
            RedisLock::Lua,
            "replication is cut, the first holder's lock lands on the master only, the master is killed, Sentinel promotes the replica",
        ),
        Plan {
            // The first holder's grant is confirmed by WAIT before the cut; then the
            // same cut and kill as redis-failover, during its section.
            faults: vec![
                after(Event::FirstGrant, 700, cut(Primary)),
                after(Event::FirstGrant, 300, Action::Kill(Primary)),
            ],
            // The model says no two holders: nobody waits for an overlap.
            overlap_within_ms: None,
            ..failover(
                ScenarioId::RedisFailoverWait,
                RedisLock::LuaWait(1),
                "holders WAIT for 1 replica before entering; then replication is cut and the master killed mid-section, Sentinel promotes the replica",
            )
        },
        split_brain(
            ScenarioId::RedisSplitBrain,
            1,
            None,
            "the master and c0 are cut off from the Sentinels and the replica (network namespaces, nftables); c0 is granted on the master; Sentinel promotes the replica; c1 is granted there; the cut heals 1.5 s later",
        ),
        split_brain(
            ScenarioId::RedisSplitBrainMinReplicas,
            2,
            Some(2),
            "as redis-split-brain with two replicas, every server with min-replicas-to-write 1, min-replicas-max-lag 2: c0 is granted inside the lag; Sentinel promotes a replica, which has the other; c1 is granted there",
        ),
        redlock(ScenarioId::Redlock, Vec::new(), "no fault: clients contend for a majority of 5 nodes"),
        Plan {
            work_ms: 5_000,
            faults: n2_killed_and_restarted(200, false),
            ..redlock(
                ScenarioId::RedlockRestart,
                Vec::new(),
                "n3, n4 are cut off while the first holder takes n0–n2; they heal; n2 restarts without its data",
            )
        },
        Plan {
            ttl_ms: 3_000,
            work_ms: 2_000,
            duration_ms: 8_000,
            // Down longer than a lease: every key it held has expired elsewhere.
            faults: n2_killed_and_restarted(3_500, false),
            ..redlock(
                ScenarioId::RedlockDelayedRestart,
                Vec::new(),
                "n3, n4 are cut off while the first holder takes n0–n2; they heal; n2 is killed and restarts empty only after a lease (3.5 s > 3 s TTL)",
            )
        },
        Plan {
            shape: Shape::Redlock {
                nodes: 5,
                aof: true,
            },
            work_ms: 5_000,
            // kill -9, then a start on its data dir: the append-only file is all it has.
            faults: n2_killed_and_restarted(200, true),
            ..redlock(
                ScenarioId::RedlockRestartAof,
                Vec::new(),
                "every node appendonly yes, appendfsync everysec; n3, n4 are cut off while the first holder takes n0–n2; they heal; n2 is killed (kill -9) and restarts at once on its data dir",
            )
        },
        Plan {
            work_ms: 5_000,
            fake_clock: true,
            beyond_model: None,
            faults: redlock_bare_majority(vec![(
                200,
                Action::Clock {
                    target: Node(2),
                    offset: "+15".into(),
                },
            )]),
            ..redlock(
                ScenarioId::RedlockClockJump,
                Vec::new(),
                "n3, n4 are cut off while the first holder takes n0–n2; they heal; n2's clock jumps 15 s ahead",
            )
        },
        Plan {
            ttl_ms: 1_000,
            work_ms: 60,
            faults: vec![at(
                500,
                Action::pause_until_another(AnyClient, 2_500),
            )],
            ..redlock(
                ScenarioId::RedlockPause,
                Vec::new(),
                "the holder stalls 2.5 s mid-section with a 1 s lease",
            )
        },
        Plan {
            // The model's three nodes. A 1 s lease: a holder's release that the split
            // swallows leaves keys that block the majority side for a lease at most.
            shape: Shape::Redlock {
                nodes: 3,
                aof: false,
            },
            ttl_ms: 1_000,
            duration_ms: 5_000,
            faults: vec![
                at(
                    500,
                    Action::Split {
                        nodes: 0b011,
                        clients: 0b001,
                    },
                ),
                at(3_500, Action::HealSplit),
            ],
            ..redlock(
                ScenarioId::RedlockSplitMajorities,
                Vec::new(),
                "the network splits for 3 s: n0, n1 with c0 | n2 with c1, c2; then it heals",
            )
        },
    ]
}

/// The plan with `replicas` replicas behind the master (`--replicas`). For
/// `redis-failover-wait` with two or more, the model's counterexample is played out:
/// replication to every replica but `replica1` is cut, so the holder's `WAIT 1` is
/// answered by `replica1` alone; the master dies; Sentinel, which may not pick
/// `replica1`, promotes a replica that never saw the lock.
pub fn with_replicas(mut plan: RedisPlan, replicas: usize) -> Result<RedisPlan, String> {
    let Shape::Sentinel { split, .. } = plan.shape else {
        return Err(format!("--replicas: {} has no replicas", plan.id));
    };
    if !(1..=4).contains(&replicas) {
        return Err(format!("--replicas: {replicas} is outside 1..=4"));
    }
    let lagging = plan.lock == RedisLock::LuaWait(1) && replicas >= 2;
    plan.shape = Shape::Sentinel {
        replicas,
        replica1_apart: lagging,
        split,
    };
    if lagging {
        plan.faults = vec![
            at(0, cut(Primary)),
            after(Event::KeyOn(Primary), 100, Action::Kill(Primary)),
        ];
        plan.story = "replication to every replica but replica1 is cut, so the holder's WAIT 1 is answered by replica1 alone; the master is killed; Sentinel may only promote a lagging replica";
        // Here the model finds two holders: the first waits for the second, as in
        // redis-failover.
        plan.overlap_within_ms = Some(20_000);
    }
    Ok(plan)
}

impl Planned for Redis {
    fn plans() -> Vec<Plan<Self>> {
        plans()
    }

    fn with_replicas(plan: Plan<Self>, replicas: usize) -> Result<Plan<Self>, String> {
        with_replicas(plan, replicas)
    }
}
