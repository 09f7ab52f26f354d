//! PostgreSQL: each spec statement as SQL on one `PgConnection`. Times are milliseconds
//! (`ttl`, a lease row's `last_lock_time`).

use locklab_models::sql::spec::{SqlCommand, SqlReply};

use crate::box_future::BoxFuture;
use sqlx::postgres::PgConnection;
use sqlx::Connection;
use sqlx::Executor;

/// The tables and the fencing sequence the locks use; idempotent.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS locks (\
    id BIGSERIAL PRIMARY KEY, \
    name TEXT NOT NULL UNIQUE, \
    owner TEXT NOT NULL, \
    created TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), \
    last_lock_time BIGINT NOT NULL DEFAULT 0); \
    CREATE TABLE IF NOT EXISTS counter (id INT PRIMARY KEY, n BIGINT NOT NULL); \
    INSERT INTO counter VALUES (1, 0) ON CONFLICT DO NOTHING; \
    CREATE SEQUENCE IF NOT EXISTS fence";

/// A connection and its `pg_backend_pid()` (what `pg_terminate_backend` takes).
pub(super) async fn connect(url: &str) -> Result<(PgConnection, u64), sqlx::Error> {
    let mut c = PgConnection::connect(url).await?;
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut c)
        .await?;
    Ok((c, u64::try_from(pid).unwrap_or(0)))
}

/// The error's SQLSTATE, if the error is the server's.
pub(super) fn sqlstate(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(d) => d.code().map(|c| c.into_owned()),
        _ => None,
    }
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Runs one statement and reads its reply the way the spec states it.
/// Boxed with its `Send` bound stated here, where the connection type is concrete
/// (see [`super::mysql`]'s `exec`).
pub(super) fn exec<'a>(
    c: &'a mut PgConnection,
    cmd: &'a SqlCommand,
) -> BoxFuture<'a, Result<SqlReply, sqlx::Error>> {
    Box::pin(exec_inner(c, cmd))
}

async fn exec_inner(c: &mut PgConnection, cmd: &SqlCommand) -> Result<SqlReply, sqlx::Error> {
    let rows = |r: sqlx::postgres::PgQueryResult| SqlReply::Rows(r.rows_affected());
    Ok(match cmd {
        SqlCommand::Insert { name, owner } => {
            let q = sqlx::query_scalar::<_, i64>(
                "INSERT INTO locks (name, owner, created) VALUES ($1, $2, clock_timestamp()) RETURNING id",
            )
            .bind(name)
            .bind(owner);
            match q.fetch_one(&mut *c).await {
                Ok(id) => SqlReply::Inserted(u64::try_from(id).unwrap_or(0)),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => SqlReply::DuplicateKey,
                Err(e) => return Err(e),
            }
        }
        SqlCommand::DeleteByName { name } => rows(
            sqlx::query("DELETE FROM locks WHERE name = $1")
                .bind(name)
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::DeleteById { id } => rows(
            sqlx::query("DELETE FROM locks WHERE id = $1")
                .bind(i64_of(*id))
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::Reap { ttl } => rows(
            sqlx::query("DELETE FROM locks WHERE created < clock_timestamp() - make_interval(secs => $1)")
                .bind(*ttl as f64 / 1000.0)
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
            sqlx::query("UPDATE locks SET owner = '', last_lock_time = 0 WHERE name = $1 AND owner = $2")
                .bind(name)
                .bind(owner)
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::BeginReadUncommitted => {
            // Accepted, and run as READ COMMITTED: PostgreSQL never reads dirty data.
            c.execute("BEGIN ISOLATION LEVEL READ UNCOMMITTED").await?;
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
                "SELECT id FROM locks WHERE name = $1 FOR UPDATE NOWAIT"
            } else {
                "SELECT id FROM locks WHERE name = $1 FOR UPDATE"
            };
            match sqlx::query(sql).bind(name).fetch_all(&mut *c).await {
                Ok(r) => SqlReply::Rows(r.len() as u64),
                Err(e) if sqlstate(&e).as_deref() == Some("55P03") => SqlReply::LockNotAvailable,
                Err(e) => return Err(e),
            }
        }
        SqlCommand::ReadCounter => SqlReply::Int(
            sqlx::query_scalar("SELECT n FROM counter WHERE id = 1")
                .fetch_one(&mut *c)
                .await?,
        ),
        SqlCommand::WriteCounter { value } => rows(
            sqlx::query("UPDATE counter SET n = $1 WHERE id = 1")
                .bind(i64::from(*value))
                .execute(&mut *c)
                .await?,
        ),
        SqlCommand::AdvisoryLock { key } | SqlCommand::AdvisoryXactLock { key } => {
            let sql = if matches!(cmd, SqlCommand::AdvisoryLock { .. }) {
                "SELECT pg_advisory_lock($1)"
            } else {
                "SELECT pg_advisory_xact_lock($1)"
            };
            sqlx::query(sql).bind(key).execute(&mut *c).await?;
            SqlReply::Ok
        }
        SqlCommand::TryAdvisoryLock { key, xact } => {
            let sql = if *xact {
                "SELECT pg_try_advisory_xact_lock($1)"
            } else {
                "SELECT pg_try_advisory_lock($1)"
            };
            SqlReply::Bool(sqlx::query_scalar(sql).bind(key).fetch_one(&mut *c).await?)
        }
        SqlCommand::AdvisoryUnlock { key } => SqlReply::Bool(
            sqlx::query_scalar("SELECT pg_advisory_unlock($1)")
                .bind(key)
                .fetch_one(&mut *c)
                .await?,
        ),
        SqlCommand::NextVal => SqlReply::Int(
            sqlx::query_scalar("SELECT nextval('fence')")
                .fetch_one(&mut *c)
                .await?,
        ),
        SqlCommand::GetLock { .. } | SqlCommand::ReleaseLock { .. } => {
            return Err(sqlx::Error::Protocol(format!(
                "{cmd:?} is MySQL's; PostgreSQL has advisory locks instead"
            )))
        }
    })
}

/// A lease's takeover in one statement (the compare-and-set): by the client's clock
/// `now`, or the server's where `None`.
async fn lease_acquire(
    c: &mut PgConnection,
    name: &str,
    owner: &str,
    now: Option<u64>,
    ttl: u64,
) -> Result<sqlx::postgres::PgQueryResult, sqlx::Error> {
    match now {
        Some(t) => {
    sqlx::query(
        "UPDATE locks SET owner = $1, last_lock_time = $2 WHERE name = $3 AND last_lock_time < $2 - $4",
    )
    .bind(owner)
    .bind(i64_of(t))
    .bind(name)
    .bind(i64_of(ttl))
    .execute(&mut *c)
    .await
        }
        None => {
    sqlx::query(
        "UPDATE locks SET owner = $1, last_lock_time = (extract(epoch from clock_timestamp()) * 1000)::bigint WHERE name = $2 AND last_lock_time < (extract(epoch from clock_timestamp()) * 1000)::bigint - $3",
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
    c: &mut PgConnection,
    name: &str,
    now: Option<u64>,
    ttl: u64,
) -> Result<SqlReply, sqlx::Error> {
        let count: i64 = match now {
            Some(t) => sqlx::query_scalar(
                "SELECT COUNT(*) FROM locks WHERE name = $1 AND last_lock_time < $2 - $3",
            )
            .bind(name)
            .bind(i64_of(t))
            .bind(i64_of(ttl)),
            None => sqlx::query_scalar(
                "SELECT COUNT(*) FROM locks WHERE name = $1 AND last_lock_time < (extract(epoch from clock_timestamp()) * 1000)::bigint - $2",
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
    c: &mut PgConnection,
    name: &str,
    owner: &str,
    now: Option<u64>,
) -> Result<sqlx::postgres::PgQueryResult, sqlx::Error> {
    match now {
        Some(t) => sqlx::query("UPDATE locks SET owner = $1, last_lock_time = $2 WHERE name = $3")
            .bind(owner)
            .bind(i64_of(t)),
        None => sqlx::query(
            "UPDATE locks SET owner = $1, last_lock_time = (extract(epoch from clock_timestamp()) * 1000)::bigint WHERE name = $2",
        )
        .bind(owner),
    }
    .bind(name)
    .execute(&mut *c)
    .await
}
