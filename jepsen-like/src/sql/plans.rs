//! The SQL rows of the catalog as run plans. A fault that must hit a holder waits for
//! the event that opens its window ("after some client entered its section"), so it
//! reproduces on every run.

use super::actions::SqlAction;
use super::cluster::{MariaDbCluster, PostgresCluster, Shape, SqlKind};
use super::locks::SqlLock;
use crate::cluster::Target::AnyClient;
use crate::plan::Plan;
use crate::schedule::{Action, Event, Step, When};

/// How long a step waits for its event before it is skipped (ms).
const EVENT_TIMEOUT_MS: u64 = 10_000;

fn after_entry(delay_ms: u64, action: Action<SqlAction>) -> Step<SqlAction> {
    Step {
        when: When::after_by(Event::Entered(AnyClient), delay_ms, EVENT_TIMEOUT_MS),
        action,
    }
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
            lock_row: lock == SqlLock::ForUpdate,
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
    vec![
        session_killed(
            "mysql-getlock-conn-kill",
            SqlLock::Session,
            "the first GET_LOCK holder's session is killed (KILL CONNECTION) 0.2 s into its 1.5 s section",
        ),
        session_killed(
            "sql-for-update-outside-tx",
            SqlLock::ForUpdate,
            "the first FOR UPDATE holder's session is killed 0.2 s into its 1.5 s section, whose work is outside the transaction",
        ),
        Plan {
            shape: Shape { lock_row: false },
            faults: vec![after_entry(0, Action::ClientCrash(AnyClient))],
            work_ms: 40,
            ttl_ms: 500,
            story: "the first holder crashes inside its section; its committed row stays",
            ..session_killed("mysql-unique-crash", SqlLock::UniqueByName, "")
        },
        Plan {
            shape: Shape { lock_row: true },
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
    ]
}

/// The PostgreSQL rows.
pub fn postgres() -> Vec<Plan<PostgresCluster>> {
    vec![session_killed(
        "pg-advisory",
        SqlLock::Session,
        "the first pg_advisory_lock holder's backend is terminated (pg_terminate_backend) 0.2 s into its 1.5 s section",
    )]
}
