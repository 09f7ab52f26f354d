//! The SQL rows of the catalog as run plans. A fault that must hit a holder waits for
//! the event that opens its window ("after some client entered its section"), so it
//! reproduces on every run.
//!
//! [`with_server_restarted`] and [`with_partition`] are variants of a row whose fault
//! ends the holder's session: the session ends because the server dies and comes back,
//! or because the connection is cut, instead of by `KILL CONNECTION` — the same fault
//! to the model (`Fault::Kill`), so the same verdict.

use super::actions::SqlAction;
use super::cluster::{MariaDb, Postgres, Shape, SqlKind};
use super::family::Sql;
use super::locks::SqlLock;
use crate::plan::{Plan, Planned};
use crate::schedule::Target::{AnyClient, Primary};
use crate::schedule::{Action, Step, When};
use locklab_models::registry::Fault;
use locklab_models::registry::ScenarioId;

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

fn after_entry(delay_ms: u64, action: Action<SqlAction>) -> Step<SqlAction> {
    Step::after_entry(delay_ms, EVENT_TIMEOUT_MS, action)
}

/// Contending clients on one server; the first holder's session is killed while it
/// works (1.5 s sections, so the next holder is in before it leaves).
fn session_killed<K: Rows>(id: ScenarioId, lock: SqlLock, story: &'static str) -> Plan<Sql<K>> {
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
        overlap_within_ms: None,
        clients: 3,
        duration_ms: 4_000,
        client_delay_ms: 0,
        fake_clock: false,
        beyond_model: None,
        faults: vec![after_entry(
            200,
            Action::Family(SqlAction::KillHolderSession),
        )],
        story,
    }
}

/// The MariaDB rows.
pub fn mariadb() -> Vec<Plan<Sql<MariaDb>>> {
    let mut plans = vec![
        session_killed(
            ScenarioId::MysqlGetlockConnKill,
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
                    action: Action::client(Fault::Crash, AnyClient, 0),
                },
            ],
            duration_ms: 6_000,
            ..session_killed(
                ScenarioId::SqlForUpdate,
                SqlLock::ForUpdateInTx,
                "the first FOR UPDATE holder's session is killed (KILL CONNECTION) 0.2 s into its 1.5 s section, and the next client to finish its work after 2.5 s crashes holding the lock; every read and write is in the locking transaction",
            )
        },
        mutex_in_tx(
            ScenarioId::SqlMutexInTx,
            false,
            Vec::new(),
            "no fault: three clients, the threads of one process, each run a synchronized method inside a transaction (read the counter, write it plus one); the lock is released as the method returns and the COMMIT follows 50 ms later",
        ),
        mutex_in_tx(
            ScenarioId::SqlMutexInTxReadUncommitted,
            true,
            vec![after_entry(0, Action::client(Fault::Rollback, AnyClient, 0))],
            "as sql-mutex-in-tx at READ UNCOMMITTED: the first client to finish its work after the first entry throws once its lock is released, and its transaction rolls back 50 ms later; the next client has read its uncommitted write by then",
        ),
        Plan {
            work_ms: 40,
            duration_ms: 3_000,
            faults: Vec::new(),
            ..session_killed(
                ScenarioId::SqlForUpdatePlainSelect,
                SqlLock::ForUpdateInTxBypassed { bypasser: 2 },
                "no fault: c0 and c1 take the lock row FOR UPDATE before they read and write the counter in the same transaction; c2's code path reads it with a plain SELECT and writes it back in a transaction of its own, taking no lock",
            )
        },
        session_killed(
            ScenarioId::SqlForUpdateOutsideTx,
            SqlLock::ForUpdate,
            "the first FOR UPDATE holder's session is killed 0.2 s into its 1.5 s section, whose work is outside the transaction",
        ),
        Plan {
            faults: vec![after_entry(0, Action::client(Fault::Hang, AnyClient, 0))],
            work_ms: 40,
            story: "the first GET_LOCK holder's worker hangs inside its section for the rest of the run; its connection, and its session, stay open",
            ..session_killed(ScenarioId::MysqlGetlockHung, SqlLock::Session, "")
        },
        Plan {
            shape: Shape {
                lock_row: false,
                reaper_ms: None,
                pool: None,
            },
            faults: vec![after_entry(0, Action::client(Fault::Crash, AnyClient, 0))],
            work_ms: 40,
            ttl_ms: 500,
            story: "the first holder crashes inside its section; its committed row stays",
            ..session_killed(ScenarioId::MysqlUniqueCrash, SqlLock::UniqueByName, "")
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
                    Action::pause_until_another(AnyClient, 1_500),
                ),
            ],
            story: "the holder stalls 1.5 s mid-section with a 0.5 s lease on the database's clock",
            ..session_killed(ScenarioId::MysqlLeaseDbtimePause, SqlLock::LeaseDbTime, "")
        },
        Plan {
            shape: Shape {
                lock_row: true,
                reaper_ms: None,
                pool: None,
            },
            // No fault: clients that start together all check the free row before
            // any of them writes it.
            clients: 4,
            work_ms: 300,
            duration_ms: 3_000,
            faults: Vec::new(),
            story: "no fault: four clients start together, each SELECTs the lease row, sees it free, and UPDATEs it",
            ..session_killed(ScenarioId::MysqlLeaseNoCas, SqlLock::LeaseNoCas, "")
        },
        Plan {
            shape: Shape {
                lock_row: true,
                reaper_ms: None,
                pool: None,
            },
            fake_clock: true,
            faults: vec![after_entry(
                200,
                Action::Clock {
                    target: Primary,
                    offset: "+3".into(),
                },
            )],
            story: "MariaDB's clock (libfaketime) jumps 3 s ahead 0.2 s into the first holder's 1.5 s section, with a 2 s lease on the database's clock",
            ..session_killed(ScenarioId::MysqlLeaseDbtimeJump, SqlLock::LeaseDbTime, "")
        },
    ];
    plans.extend(mariadb_timed());
    plans
}

/// A holder stalls 1.5 s mid-section, twice, with a 0.5 s TTL; the reaper (for the
/// unique key) deletes rows older than that.
fn paused<K: Rows>(
    id: ScenarioId,
    lock: SqlLock,
    reaper: bool,
    story: &'static str,
) -> Plan<Sql<K>> {
    let pause = |ms| Action::pause_until_another(AnyClient, ms);
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

/// The rows of MariaDB with a reaper (alive or dead) or a skewed client clock.
fn mariadb_timed() -> Vec<Plan<Sql<MariaDb>>> {
    vec![
        // Sections of 300 ms (under the reaper's 0.5 s): the lock is held nearly all the
        // time, so the stalled holder's DELETE by name, when it resumes, finds another
        // client's row — with 60 ms sections it found the lock free in one fresh-clone
        // run in about twenty, and the foreign delete the model finds did not happen.
        Plan {
            work_ms: 300,
            ..paused(
                ScenarioId::MysqlUniqueReaper,
                SqlLock::UniqueReaped { by_id: false },
                true,
                "the holder stalls 1.5 s mid-section (twice); a reaper deletes rows older than 0.5 s; release is DELETE by name",
            )
        },
        Plan {
            work_ms: 300,
            ..paused(
                ScenarioId::MysqlUniqueReaperFenced,
                SqlLock::UniqueReaped { by_id: true },
                true,
                "the holder stalls 1.5 s mid-section (twice); a reaper deletes rows older than 0.5 s; release by id, the id a fencing token",
            )
        },
        Plan {
            shape: Shape {
                lock_row: false,
                reaper_ms: Some(500),
                pool: None,
            },
            faults: vec![
                Step {
                    when: When::At(0),
                    action: Action::Family(SqlAction::StopReaper),
                },
                after_entry(0, Action::client(Fault::Crash, AnyClient, 0)),
            ],
            work_ms: 40,
            ttl_ms: 500,
            story: "the reaper job (rows older than 0.5 s) dies as the run starts; the first holder then crashes inside its section, and its committed row stays",
            ..session_killed(
                ScenarioId::MysqlUniqueReaperDies,
                SqlLock::UniqueReaped { by_id: false },
                "",
            )
        },
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
                ScenarioId::MysqlLeaseClockSkew,
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
pub fn postgres() -> Vec<Plan<Sql<Postgres>>> {
    vec![
        session_killed(
            ScenarioId::PgAdvisory,
            SqlLock::Session,
            "the first pg_advisory_lock holder's backend is terminated (pg_terminate_backend) 0.2 s into its 1.5 s section",
        ),
        session_killed(
            ScenarioId::PgAdvisoryXact,
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
            ..session_killed(ScenarioId::PgAdvisoryPool, SqlLock::Session, "")
        },
        session_killed(
            ScenarioId::PgAdvisoryFenced,
            SqlLock::SessionFenced,
            "the first holder's backend is terminated 0.2 s into its 1.5 s section; each grant takes a nextval('fence') token the resource checks",
        ),
    ]
}

/// A server kind whose catalog rows are plans here.
pub trait Rows: SqlKind + Sized {
    /// Its rows.
    fn rows() -> Vec<Plan<Sql<Self>>>;
}

impl Rows for MariaDb {
    fn rows() -> Vec<Plan<Sql<MariaDb>>> {
        mariadb()
    }
}

impl Rows for Postgres {
    fn rows() -> Vec<Plan<Sql<Postgres>>> {
        postgres()
    }
}

/// How long a holder works in a server-restart run (ms): longer than the server takes
/// to come back here (well under a second for either; a slow machine may take more),
/// so that another client is granted on the restarted server while the first works on.
const RESTART_WORK_MS: u64 = 3_000;

/// Row `id`'s plan with each step that kills the holder's session replaced by `steps`
/// (the first at the killing step's time, the rest after it); `None` for a row whose
/// fault is not a killed session.
fn session_ended_by<K: Rows>(
    id: ScenarioId,
    steps: &[Action<SqlAction>],
    gap_ms: u64,
) -> Option<Plan<Sql<K>>> {
    let mut p = K::rows().into_iter().find(|p| p.id == id)?;
    let at = p
        .faults
        .iter()
        .position(|s| s.action == Action::Family(SqlAction::KillHolderSession))?;
    let when = p.faults[at].when;
    let mut replaced = Vec::with_capacity(steps.len());
    for (i, action) in steps.iter().enumerate() {
        replaced.push(match i {
            0 => Step {
                when,
                action: action.clone(),
            },
            // The event came already: the delay counts from the step before.
            _ => after_entry(gap_ms, action.clone()),
        });
    }
    p.faults.splice(at..=at, replaced);
    Some(p)
}

/// Row `id`'s plan with the holder's session ended by the server dying: `kill -9` of
/// the server where the row kills the session (0.2 s into the first holder's section),
/// and a restart on its data dir 0.1 s later. Sections last `RESTART_WORK_MS` (timed
/// steps and the run move by as much), so the first holder still works when the
/// others, connecting again, are granted on the new server.
pub fn with_server_restarted<K: Rows>(id: ScenarioId) -> Option<Plan<Sql<K>>> {
    let restart = Action::Restart {
        target: Primary,
        keep_data: true,
    };
    let mut p = session_ended_by::<K>(id, &[Action::Kill(Primary), restart], 100)?;
    let longer = RESTART_WORK_MS.saturating_sub(p.work_ms);
    p.work_ms += longer;
    p.duration_ms += longer;
    for step in &mut p.faults {
        if let When::At(ms) = &mut step.when {
            *ms += longer;
        }
    }
    p.story = "the row's faults, the holder's session ended by the server instead of KILL CONNECTION: kill -9 of the server 0.2 s into the first holder's 3 s section, restarted on its data dir 0.1 s later; the clients open new sessions";
    Some(p)
}

/// Row `id`'s plan with the holder's session ended by a partition: the run's proxy
/// cuts every client's connection to the server where the row kills the session (0.2 s
/// into the first holder's section) and lets new ones through 0.3 s later. The server
/// sees the connections close and ends their sessions, as `KILL CONNECTION` does.
pub fn with_partition<K: Rows>(id: ScenarioId) -> Option<Plan<Sql<K>>> {
    let steps = [Action::Partition(Primary), Action::HealPartition(Primary)];
    let mut p = session_ended_by::<K>(id, &steps, 300)?;
    p.story = "the row's faults, the holder's session ended by a partition instead of KILL CONNECTION: every client cut from the server (the proxy drops their connections) 0.2 s into the first holder's 1.5 s section, healed 0.3 s later; the clients open new sessions";
    Some(p)
}

impl<K: Rows> Planned for Sql<K> {
    fn plans() -> Vec<Plan<Self>> {
        K::rows()
    }
}

/// A JVM lock inside `@Transactional` (write-up 000): no lock row, no reaper; the
/// method's work is short and the COMMIT follows its lock's release 50 ms later.
fn mutex_in_tx<K: Rows>(
    id: ScenarioId,
    read_uncommitted: bool,
    faults: Vec<Step<SqlAction>>,
    story: &'static str,
) -> Plan<Sql<K>> {
    Plan {
        shape: Shape {
            lock_row: false,
            reaper_ms: None,
            pool: None,
        },
        work_ms: 40,
        duration_ms: 3_000,
        faults,
        story,
        ..session_killed(
            id,
            SqlLock::MutexInTx {
                commit_after_ms: 50,
                read_uncommitted,
            },
            "",
        )
    }
}
