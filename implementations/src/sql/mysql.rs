//! MariaDB / MySQL: each spec statement as the SQL the write-ups deploy, on one
//! `MySqlConnection`. Times are milliseconds (`ttl`, a lease row's `last_lock_time`).

use locklab_models::sql::spec::{SqlCommand, SqlReply};

use crate::box_future::BoxFuture;
use sqlx::mysql::{MySqlConnection, MySqlDatabaseError};
use sqlx::Connection;
use sqlx::Executor;

/// The tables the locks use; idempotent.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS locks (\
    id BIGINT AUTO_INCREMENT PRIMARY KEY, \
    name VARCHAR(128) NOT NULL UNIQUE, \
    owner VARCHAR(128) NOT NULL, \
    created DATETIME(6) NOT NULL DEFAULT NOW(6), \
    last_lock_time BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB; \
    CREATE TABLE IF NOT EXISTS counter (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB; \
    INSERT IGNORE INTO counter VALUES (1, 0)";

/// A connection and its `CONNECTION_ID()` (what `KILL CONNECTION` takes).
pub(super) async fn connect(url: &str) -> Result<(MySqlConnection, u64), sqlx::Error> {
    let mut c = MySqlConnection::connect(url).await?;
    let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut c)
        .await?;
    Ok((c, id))
}

/// The server's error number, if the error is the server's.
pub(super) fn error_number(e: &sqlx::Error) -> Option<u16> {
    match e {
        sqlx::Error::Database(d) => d
            .try_downcast_ref::<MySqlDatabaseError>()
            .map(|m| m.number()),
        _ => None,
    }
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Runs one statement and reads its reply the way the spec states it.
///
/// Boxed with its `Send` bound stated here, where the connection type is concrete:
/// sqlx's executor impls are generic over lifetimes, and an unboxed future of this
/// function does not prove `Send` to a caller that boxes it later.
pub(super) fn exec<'a>(
    c: &'a mut MySqlConnection,
    cmd: &'a SqlCommand,
) -> BoxFuture<'a, Result<SqlReply, sqlx::Error>> {
    Box::pin(exec_inner(c, cmd))
}

async fn exec_inner(c: &mut MySqlConnection, cmd: &SqlCommand) -> Result<SqlReply, sqlx::Error> {
    let rows = |r: sqlx::mysql::MySqlQueryResult| SqlReply::Rows(r.rows_affected());
    Ok(match cmd {
        SqlCommand::Insert { name, owner } => {
            let q = sqlx::query("INSERT INTO locks (name, owner, created) VALUES (?, ?, NOW(6))")
                .bind(name)
                .bind(owner);
            match q.execute(&mut *c).await {
                Ok(r) => SqlReply::Inserted(r.last_insert_id()),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => SqlReply::DuplicateKey,
                Err(e) => return Err(e),
            }
        }
        SqlCommand::DeleteByName { name } => rows(
            sqlx::query("DELETE FROM locks WHERE name = ?")
                .bind(name)
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::DeleteById { id } => rows(
            sqlx::query("DELETE FROM locks WHERE id = ?")
                .bind(i64_of(*id))
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::Reap { ttl } => rows(
            sqlx::query("DELETE FROM locks WHERE created < NOW(6) - INTERVAL ? MICROSECOND")
                .bind(i64_of(ttl.saturating_mul(1000)))
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::LeaseAcquire {
            name,
            owner,
            now,
            ttl,
        } => rows(lease_acquire(c, name, owner, *now, *ttl).await?),
        SqlCommand::LeaseCheck { name, now, ttl } => lease_check(c, name, *now, *ttl).await?,
        SqlCommand::LeaseTake { name, owner, now } => rows(lease_take(c, name, owner, *now).await?),
        SqlCommand::LeaseRelease { name, owner } => rows(
            sqlx::query("UPDATE locks SET owner = '', last_lock_time = 0 WHERE name = ? AND owner = ?")
                .bind(name)
                .bind(owner)
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::GetLock { name } | SqlCommand::ReleaseLock { name } => {
            let sql = if matches!(cmd, SqlCommand::GetLock { .. }) {
                "SELECT CAST(GET_LOCK(?, 0) AS SIGNED)"
            } else {
                "SELECT CAST(RELEASE_LOCK(?) AS SIGNED)"
            };
            let v: Option<i64> = sqlx::query_scalar(sql).bind(name).fetch_one(&mut *c).await?;
            v.map_or(SqlReply::Null, SqlReply::Int)
        }
        SqlCommand::BeginReadUncommitted => {
            // The level applies to the next transaction only.
            c.execute("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
                .await?;
            c.execute("BEGIN").await?;
            SqlReply::Ok
        }
        SqlCommand::Begin | SqlCommand::Commit | SqlCommand::Rollback => {
            let sql = match cmd {
                SqlCommand::Begin => "BEGIN",
                SqlCommand::Commit => "COMMIT",
                _ => "ROLLBACK",
            };
            c.execute(sql).await?;
            SqlReply::Ok
        }
        SqlCommand::SelectForUpdate { name, nowait } => {
            let sql = if *nowait {
                "SELECT id FROM locks WHERE name = ? FOR UPDATE NOWAIT"
            } else {
                "SELECT id FROM locks WHERE name = ? FOR UPDATE"
            };
            match sqlx::query(sql).bind(name).fetch_all(&mut *c).await {
                Ok(r) => SqlReply::Rows(r.len() as u64),
                // MariaDB answers NOWAIT with ER_LOCK_WAIT_TIMEOUT, MySQL 8 with ER_LOCK_NOWAIT.
                Err(e) if matches!(error_number(&e), Some(1205 | 3572)) => SqlReply::LockNotAvailable,
                Err(e) => return Err(e),
            }
        }
        SqlCommand::ReadCounter => SqlReply::Int(
            sqlx::query_scalar("SELECT n FROM counter WHERE id = 1")
                .fetch_one(&mut *c)
                .await?,
        ),
        SqlCommand::WriteCounter { value } => rows(
            sqlx::query("UPDATE counter SET n = ? WHERE id = 1")
                .bind(i64::from(*value))
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::AdvisoryLock { .. }
        | SqlCommand::AdvisoryXactLock { .. }
        | SqlCommand::TryAdvisoryLock { .. }
        | SqlCommand::AdvisoryUnlock { .. }
        | SqlCommand::NextVal => {
            return Err(sqlx::Error::Protocol(format!(
                "{cmd:?} is PostgreSQL's; MariaDB has no such statement"
            )))
        }
    })
}

/// A lease's takeover in one statement (the compare-and-set): by the client's clock
/// `now`, or the server's where `None`.
async fn lease_acquire(
    c: &mut MySqlConnection,
    name: &str,
    owner: &str,
    now: Option<u64>,
    ttl: u64,
) -> Result<sqlx::mysql::MySqlQueryResult, sqlx::Error> {
    match now {
        Some(t) => {
    sqlx::query(
        "UPDATE locks SET owner = ?, last_lock_time = ? WHERE name = ? AND last_lock_time < ? - ?",
    )
    .bind(owner)
    .bind(i64_of(t))
    .bind(name)
    .bind(i64_of(t))
    .bind(i64_of(ttl))
    .execute(&mut *c)
    .await
        }
        None => {
    sqlx::query(
        "UPDATE locks SET owner = ?, last_lock_time = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) WHERE name = ? AND last_lock_time < CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - ?",
    )
    .bind(owner)
    .bind(name)
    .bind(i64_of(ttl))
    .execute(&mut *c)
    .await
        }
    }
}

/// The check half of a check-then-set takeover: how many rows a takeover would take.
async fn lease_check(
    c: &mut MySqlConnection,
    name: &str,
    now: Option<u64>,
    ttl: u64,
) -> Result<SqlReply, sqlx::Error> {
        let count: i64 = match now {
            Some(t) => sqlx::query_scalar(
                "SELECT COUNT(*) FROM locks WHERE name = ? AND last_lock_time < ? - ?",
            )
            .bind(name)
            .bind(i64_of(t))
            .bind(i64_of(ttl)),
            None => sqlx::query_scalar(
                "SELECT COUNT(*) FROM locks WHERE name = ? AND last_lock_time < CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - ?",
            )
            .bind(name)
            .bind(i64_of(ttl)),
        }
        .fetch_one(&mut *c)
        .await?;
        Ok(SqlReply::Rows(u64::try_from(count).unwrap_or(0)))
}

/// The set half of a check-then-set takeover, with no condition on what the check saw.
async fn lease_take(
    c: &mut MySqlConnection,
    name: &str,
    owner: &str,
    now: Option<u64>,
) -> Result<sqlx::mysql::MySqlQueryResult, sqlx::Error> {
    match now {
        Some(t) => sqlx::query("UPDATE locks SET owner = ?, last_lock_time = ? WHERE name = ?")
            .bind(owner)
            .bind(i64_of(t)),
        None => sqlx::query(
            "UPDATE locks SET owner = ?, last_lock_time = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) WHERE name = ?",
        )
        .bind(owner),
    }
    .bind(name)
    .execute(&mut *c)
    .await
}
