//! The scenarios `locklab run` knows: for each catalog id, the servers, the lock, the
//! workload's timing and the planned faults. The expected verdict is not here: it is
//! the model catalog's (`locklab_models::catalog`), so the two can only agree or
//! visibly disagree.

use crate::schedule::Action;
use crate::topology::Shape;

/// Which lock the clients use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// A single-node protocol of `locklab_implementations::redis::single_node`, by id.
    SingleNode(&'static str),
    /// `redis-lua` with `WAIT replicas` before entering.
    LuaWait(u32),
    /// Redlock over every node.
    Redlock,
}

/// How one scenario runs on real servers.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The catalog id.
    pub id: &'static str,
    /// The servers.
    pub shape: Shape,
    /// The lock.
    pub lock: LockKind,
    /// Lease asked for with every acquire (ms).
    pub ttl_ms: u64,
    /// Time inside the critical section between the read and the write (ms).
    pub work_ms: u64,
    /// Clients, unless `--clients` says otherwise.
    pub clients: usize,
    /// Run length, unless `--duration` says otherwise (ms).
    pub duration_ms: u64,
    /// Clients start this long after the nemesis (ms), so a fault planned at 0 is in
    /// force before the first acquire.
    pub client_delay_ms: u64,
    /// Whether lock servers run under libfaketime.
    pub fake_clock: bool,
    /// The faults, at planned times (ms after the nemesis starts).
    pub faults: Vec<(u64, Action)>,
    /// What the faults do, in one sentence, for reports.
    pub story: &'static str,
}

fn t(name: &str) -> String {
    name.to_string()
}

fn single(id: &'static str, lock: &'static str) -> Plan {
    Plan {
        id,
        shape: Shape::Single,
        lock: LockKind::SingleNode(lock),
        ttl_ms: 2_000,
        work_ms: 40,
        clients: 4,
        duration_ms: 4_000,
        client_delay_ms: 0,
        fake_clock: false,
        faults: Vec::new(),
        story: "no fault: clients contend for the lock",
    }
}

/// A holder stalls mid-section longer than its lease, twice.
fn paused(id: &'static str, lock: &'static str, story: &'static str) -> Plan {
    Plan {
        ttl_ms: 500,
        work_ms: 60,
        duration_ms: 5_000,
        faults: vec![
            (600, Action::ClientPause { ms: 1_500 }),
            (2_800, Action::ClientPause { ms: 1_500 }),
        ],
        story,
        ..single(id, lock)
    }
}

fn failover(id: &'static str, lock: LockKind, story: &'static str) -> Plan {
    Plan {
        id,
        shape: Shape::Sentinel {
            replicas: 1,
            replica1_apart: false,
        },
        lock,
        ttl_ms: 30_000,
        // Long enough to span Sentinel's failover (2.2–3.2 s after the kill) with room
        // for a slow machine: the first holder is still inside when the next gets in.
        work_ms: 8_000,
        clients: 3,
        duration_ms: 9_000,
        client_delay_ms: 300,
        fake_clock: false,
        faults: vec![
            (
                0,
                Action::CutReplication {
                    target: t("master"),
                },
            ),
            (
                1_300,
                Action::Kill {
                    target: t("master"),
                },
            ),
        ],
        story,
    }
}

fn redlock(id: &'static str, faults: Vec<(u64, Action)>, story: &'static str) -> Plan {
    Plan {
        id,
        shape: Shape::Redlock { nodes: 5 },
        lock: LockKind::Redlock,
        ttl_ms: 10_000,
        work_ms: 40,
        clients: 3,
        duration_ms: 4_000,
        client_delay_ms: 200,
        fake_clock: false,
        faults,
        story,
    }
}

/// The first holder gets a bare majority (n0–n2) while n3 and n4 are cut off, then
/// they come back; `then` makes n2 forget the lock.
fn redlock_bare_majority(then: Vec<(u64, Action)>) -> Vec<(u64, Action)> {
    let mut f = vec![
        (0, Action::Partition { target: t("n3") }),
        (0, Action::Partition { target: t("n4") }),
        (800, Action::HealPartition { target: t("n3") }),
        (800, Action::HealPartition { target: t("n4") }),
    ];
    f.extend(then);
    f
}

/// Every scenario `locklab run` can run.
pub fn plans() -> Vec<Plan> {
    vec![
        single("redis-lua", "redis-lua"),
        paused(
            "redis-lua-pause",
            "redis-lua",
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice)",
        ),
        paused(
            "redis-lua-fenced",
            "redis-lua-fenced",
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice); the resource checks fencing tokens",
        ),
        paused(
            "redis-del-unconditional",
            "redis-del-unconditional",
            "the holder stalls 1.5 s mid-section with a 0.5 s lease (twice), then DELs whatever lock is there",
        ),
        failover(
            "redis-failover",
            LockKind::SingleNode("redis-lua"),
            "replication is cut, the first holder's lock lands on the master only, the master is killed, Sentinel promotes the replica",
        ),
        Plan {
            // The first holder's grant is confirmed by WAIT before the cut; then the
            // same cut and kill as redis-failover, during its section.
            faults: vec![
                (1_000, Action::CutReplication { target: t("master") }),
                (1_300, Action::Kill { target: t("master") }),
            ],
            ..failover(
                "redis-failover-wait",
                LockKind::LuaWait(1),
                "holders WAIT for 1 replica before entering; then replication is cut and the master killed mid-section, Sentinel promotes the replica",
            )
        },
        redlock("redlock", Vec::new(), "no fault: clients contend for a majority of 5 nodes"),
        Plan {
            work_ms: 5_000,
            faults: redlock_bare_majority(vec![
                (1_000, Action::Kill { target: t("n2") }),
                (
                    1_200,
                    Action::Restart {
                        target: t("n2"),
                        keep_data: false,
                    },
                ),
            ]),
            ..redlock(
                "redlock-restart",
                Vec::new(),
                "n3, n4 are cut off while the first holder takes n0–n2; they heal; n2 restarts without its data",
            )
        },
        Plan {
            work_ms: 5_000,
            fake_clock: true,
            faults: redlock_bare_majority(vec![(
                1_000,
                Action::Clock {
                    target: t("n2"),
                    offset: "+15".into(),
                },
            )]),
            ..redlock(
                "redlock-clock-jump",
                Vec::new(),
                "n3, n4 are cut off while the first holder takes n0–n2; they heal; n2's clock jumps 15 s ahead",
            )
        },
        Plan {
            ttl_ms: 1_000,
            work_ms: 60,
            faults: vec![(500, Action::ClientPause { ms: 2_500 })],
            ..redlock(
                "redlock-pause",
                Vec::new(),
                "the holder stalls 2.5 s mid-section with a 1 s lease",
            )
        },
    ]
}

/// The plan for `id`, or the ids that can run.
pub fn find(id: &str) -> Result<Plan, Vec<&'static str>> {
    let all = plans();
    match all.iter().find(|p| p.id == id) {
        Some(p) => Ok(p.clone()),
        None => Err(all.iter().map(|p| p.id).collect()),
    }
}

/// The plan with `replicas` replicas behind the master (`--replicas`). For
/// `redis-failover-wait` with two or more, the model's counterexample is played out:
/// replication to every replica but `replica1` is cut, so the holder's `WAIT 1` is
/// answered by `replica1` alone; the master dies; Sentinel, which may not pick
/// `replica1`, promotes a replica that never saw the lock.
pub fn with_replicas(mut plan: Plan, replicas: usize) -> Result<Plan, String> {
    let Shape::Sentinel { .. } = plan.shape else {
        return Err(format!("--replicas: {} has no replicas", plan.id));
    };
    if !(1..=4).contains(&replicas) {
        return Err(format!("--replicas: {replicas} is outside 1..=4"));
    }
    let lagging = plan.id == "redis-failover-wait" && replicas >= 2;
    plan.shape = Shape::Sentinel {
        replicas,
        replica1_apart: lagging,
    };
    if lagging {
        plan.faults = vec![
            (
                0,
                Action::CutReplication {
                    target: t("master"),
                },
            ),
            (
                1_300,
                Action::Kill {
                    target: t("master"),
                },
            ),
        ];
        plan.story = "replication to every replica but replica1 is cut, so the holder's WAIT 1 is answered by replica1 alone; the master is killed; Sentinel may only promote a lagging replica";
    }
    Ok(plan)
}
