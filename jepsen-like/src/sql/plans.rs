//! The SQL rows of the catalog as run plans. A fault that must hit a holder waits for
//! the event that opens its window ("after some client entered its section"), so it
//! reproduces on every run.

use super::actions::SqlAction;
use super::cluster::{MariaDbCluster, PostgresCluster, Shape, SqlKind};
use super::locks::SqlLock;
use crate::cluster::Target::AnyClient;
use crate::plan::Plan;
use crate::schedule::{Action, Step, When};

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

fn after_entry(delay_ms: u64, action: Action<SqlAction>) -> Step<SqlAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

/// Contending clients on one server; the first holder's session is killed while it
/// works (1.5 s sections, so the next holder is in before it leaves).
fn session_killed<K: SqlKind>(
    id: &'static str,
    lock: SqlLock,
    story: &'static str,
) -> Plan<super::cluster::SqlCluster<K>> {
    Plan {
        id,
        shape: Shape {
            lock_row: lock.needs_row(),
            reaper_ms: None,
            pool: None,
        },
        lock,
        ttl_ms: 2_000,
        work_ms: 1_500,
        clients: 3,
        duration_ms: 4_000,
        client_delay_ms: 0,
        fake_clock: false,
        faults: vec![after_entry(
            200,
            Action::Family(SqlAction::KillHolderSession),
        )],
        story,
    }
}

/// The MariaDB rows.
pub fn mariadb() -> Vec<Plan<MariaDbCluster>> {
    let mut plans = vec![
        session_killed(
            "mysql-getlock-conn-kill",
            SqlLock::Session,
            "the first GET_LOCK holder's session is killed (KILL CONNECTION) 0.2 s into its 1.5 s section",
        ),
        Plan {
            // The model's two faults: a session killed, and a later holder that crashes
            // (its process dies: its connection closes and the server rolls back).
            faults: vec![
                after_entry(200, Action::Family(SqlAction::KillHolderSession)),
                Step {
                    when: When::At(2_500),
                    action: Action::ClientCrash(AnyClient),
                },
            ],
            duration_ms: 6_000,
            ..session_killed(
                "sql-for-update",
                SqlLock::ForUpdateInTx,
                "the first FOR UPDATE holder's session is killed (KILL CONNECTION) 0.2 s into its 1.5 s section, and the next client to finish its work after 2.5 s crashes holding the lock; every read and write is in the locking transaction",
            )
        },
        session_killed(
            "sql-for-update-outside-tx",
            SqlLock::ForUpdate,
            "the first FOR UPDATE holder's session is killed 0.2 s into its 1.5 s section, whose work is outside the transaction",
        ),
        Plan {
            shape: Shape {
                lock_row: false,
                reaper_ms: None,
                pool: None,
            },
            faults: vec![after_entry(0, Action::ClientCrash(AnyClient))],
            work_ms: 40,
            ttl_ms: 500,
            story: "the first holder crashes inside its section; its committed row stays",
            ..session_killed("mysql-unique-crash", SqlLock::UniqueByName, "")
        },
        Plan {
            shape: Shape {
                lock_row: true,
                reaper_ms: None,
                pool: None,
            },
            ttl_ms: 500,
            work_ms: 60,
            duration_ms: 5_000,
            faults: vec![
                after_entry(
                    0,
                    Action::ClientPause {
                        target: AnyClient,
                        ms: 1_500,
                    },
                ),
            ],
            story: "the holder stalls 1.5 s mid-section with a 0.5 s lease on the database's clock",
            ..session_killed("mysql-lease-dbtime-pause", SqlLock::LeaseDbTime, "")
        },
    ];
    plans.extend(mariadb_timed());
    plans
}

/// A holder stalls 1.5 s mid-section, twice, with a 0.5 s TTL; the reaper (for the
/// unique key) deletes rows older than that.
fn paused<K: SqlKind>(
    id: &'static str,
    lock: SqlLock,
    reaper: bool,
    story: &'static str,
) -> Plan<super::cluster::SqlCluster<K>> {
    let pause = |ms| Action::ClientPause {
        target: AnyClient,
        ms,
    };
    Plan {
        shape: Shape {
            lock_row: !reaper,
            reaper_ms: reaper.then_some(500),
            pool: None,
        },
        ttl_ms: 500,
        work_ms: 60,
        clients: 4,
        duration_ms: 5_000,
        faults: vec![
            after_entry(0, pause(1_500)),
            Step {
                when: When::At(2_800),
                action: pause(1_500),
            },
        ],
        story,
        ..session_killed(id, lock, "")
    }
}

/// The rows of MariaDB with a reaper or a skewed client clock.
fn mariadb_timed() -> Vec<Plan<MariaDbCluster>> {
    vec![
        paused(
            "mysql-unique-reaper",
            SqlLock::UniqueReaped { by_id: false },
            true,
            "the holder stalls 1.5 s mid-section (twice); a reaper deletes rows older than 0.5 s; release is DELETE by name",
        ),
        paused(
            "mysql-unique-reaper-fenced",
            SqlLock::UniqueReaped { by_id: true },
            true,
            "the holder stalls 1.5 s mid-section (twice); a reaper deletes rows older than 0.5 s; release by id, the id a fencing token",
        ),
        Plan {
            shape: Shape {
                lock_row: true,
                reaper_ms: None,
                pool: None,
            },
            ttl_ms: 1_000,
            work_ms: 300,
            duration_ms: 4_000,
            faults: Vec::new(),
            story: "c0's clock runs 1.5 s ahead of the others' with a 1 s lease on the client's clock",
            ..session_killed(
                "mysql-lease-clock-skew",
                SqlLock::LeaseClientTime {
                    skewed: 0,
                    ahead_ms: 1_500,
                },
                "",
            )
        },
    ]
}

/// The PostgreSQL rows.
pub fn postgres() -> Vec<Plan<PostgresCluster>> {
    vec![
        session_killed(
            "pg-advisory",
            SqlLock::Session,
            "the first pg_advisory_lock holder's backend is terminated (pg_terminate_backend) 0.2 s into its 1.5 s section",
        ),
        session_killed(
            "pg-advisory-xact",
            SqlLock::AdvisoryXact,
            "the first pg_advisory_xact_lock holder's backend is terminated 0.2 s into its 1.5 s section, whose read and write are in the locking transaction",
        ),
        Plan {
            shape: Shape {
                lock_row: false,
                reaper_ms: None,
                pool: Some(2),
            },
            work_ms: 300,
            faults: Vec::new(),
            story: "no fault: every client's pg_try_advisory_lock and pg_advisory_unlock go through one application pool of two backends",
            ..session_killed("pg-advisory-pool", SqlLock::Session, "")
        },
        session_killed(
            "pg-advisory-fenced",
            SqlLock::SessionFenced,
            "the first holder's backend is terminated 0.2 s into its 1.5 s section; each grant takes a nextval('fence') token the resource checks",
        ),
    ]
}
