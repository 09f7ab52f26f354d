//! One database connection — one server session — of either dialect, through which a
//! lock sends the spec's statements, each recorded with its window when a
//! [`StatementLog`] is attached. A session lock or a transaction lives on exactly one
//! of these, which is why every lock handle owns its own.
//!
//! A session the server ended (killed, restarted, its connection cut) is replaced as an
//! application's would be: the next statement that is not part of a transaction opened
//! on the lost session goes out on a new connection to the same URL. Statements of such
//! a transaction still go to the lost session and fail, because the transaction rolled
//! back with it: sending its `COMMIT` on a new session would report a commit that never
//! happened.

use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_models::sql::Dialect;
use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;
use sqlx::Executor;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Mutex;

use super::log::StatementLog;
use super::{mysql, postgres};
use crate::error::LockError;

enum Conn {
    MySql(MySqlConnection),
    Postgres(PgConnection),
    /// An application's pool: each statement runs on whichever backend the pool hands
    /// out, so a session lock taken through it belongs to that backend, not to the
    /// caller (`pg-advisory-pool`).
    PgPool(sqlx::PgPool),
}

/// A connection to MariaDB/MySQL (`mysql://…`) or PostgreSQL (`postgres://…`).
pub struct Session {
    conn: Mutex<Conn>,
    /// The server's id of the current session (it changes when a lost one is replaced).
    id: AtomicU64,
    /// Where a lost session is replaced from (`None`: a pool, which replaces its own).
    url: Option<String>,
    dialect: Dialect,
    log: Option<StatementLog>,
    /// A `BEGIN` answered and no `COMMIT`/`ROLLBACK` sent since: the statements until
    /// then belong to a transaction of the current session.
    in_tx: AtomicBool,
    /// Set once a statement found the session gone: the server ended it, so its open
    /// transaction rolled back and nothing sent on it can commit any more.
    gone: AtomicBool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("dialect", &self.dialect)
            .field("id", &self.id())
            .finish()
    }
}

/// The dialect a URL names.
pub fn dialect_of(url: &str) -> Result<Dialect, LockError> {
    if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        Ok(Dialect::MySql)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Dialect::Postgres)
    } else {
        Err(LockError::InvalidConfig(format!(
            "{url:?} is not a mysql:// or postgres:// URL"
        )))
    }
}

/// Whether an error means the session is gone (killed, terminated, or the socket
/// closed), as opposed to a statement the server refused.
fn lost(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Io(_))
        // ER_CONNECTION_KILLED, CR_SERVER_GONE_ERROR, CR_SERVER_LOST.
        || matches!(mysql::error_number(e), Some(1927 | 2006 | 2013))
        // admin_shutdown: pg_terminate_backend.
        || postgres::sqlstate(e).as_deref() == Some("57P01")
}

/// A new session of `dialect` at `url` (`mysql://` already) and its server id.
async fn open(dialect: Dialect, url: &str) -> Result<(Conn, u64), LockError> {
    Ok(match dialect {
        Dialect::MySql => {
            let (c, id) = mysql::connect(url).await.map_err(LockError::backend)?;
            (Conn::MySql(c), id)
        }
        Dialect::Postgres => {
            let (c, id) = postgres::connect(url).await.map_err(LockError::backend)?;
            (Conn::Postgres(c), id)
        }
    })
}

impl Session {
    /// Connects; statements are recorded in `log` when given.
    pub async fn connect(url: &str, log: Option<StatementLog>) -> Result<Session, LockError> {
        let dialect = dialect_of(url)?;
        let url = url.replacen("mariadb://", "mysql://", 1);
        let (conn, id) = open(dialect, &url).await?;
        Ok(Session {
            conn: Mutex::new(conn),
            id: AtomicU64::new(id),
            url: Some(url),
            dialect,
            log,
            in_tx: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        })
    }

    /// A PostgreSQL pool of `size` backends (`postgres://…`), shared by every handle
    /// given this session: statements go one at a time, each through the backend the
    /// pool hands out (sqlx's pool hands out its idle backends in turn).
    pub async fn connect_pool(
        url: &str,
        size: u32,
        log: Option<StatementLog>,
    ) -> Result<Session, LockError> {
        if dialect_of(url)? != Dialect::Postgres {
            return Err(LockError::InvalidConfig(format!(
                "{url:?}: a pool of advisory-lock sessions needs postgres://"
            )));
        }
        let pool = sqlx::postgres::PgPoolOptions::new()
            .min_connections(size)
            .max_connections(size)
            .connect(url)
            .await
            .map_err(LockError::backend)?;
        Ok(Session {
            conn: Mutex::new(Conn::PgPool(pool)),
            id: AtomicU64::new(0),
            url: None,
            dialect: Dialect::Postgres,
            log,
            in_tx: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        })
    }

    /// The server's id of the current session (`CONNECTION_ID()`, `pg_backend_pid()`):
    /// what `KILL CONNECTION` and `pg_terminate_backend` take (0 for a pool: no one
    /// session).
    pub fn id(&self) -> u64 {
        self.id.load(Ordering::Acquire)
    }

    /// Whether a statement found this session gone (killed, terminated, its socket
    /// closed) and no new one has replaced it yet: its transaction, if one was open,
    /// certainly rolled back.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// Whether a transaction is open on this session (a `BEGIN` answered, no `COMMIT`
    /// or `ROLLBACK` sent since), on a session lost or not.
    pub fn in_transaction(&self) -> bool {
        self.in_tx.load(Ordering::Acquire)
    }

    /// The server's dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Replaces a lost session by a new one at the same URL, unless a transaction of
    /// the lost one is still to be ended (see the module's doc). A failed connect is
    /// the caller's error; the session stays lost until one succeeds.
    async fn replace_if_lost(&self, conn: &mut Conn) -> Result<(), LockError> {
        let Some(url) = &self.url else {
            return Ok(());
        };
        if !self.is_gone() || self.in_transaction() {
            return Ok(());
        }
        let (new, id) = open(self.dialect, url).await?;
        *conn = new;
        self.id.store(id, Ordering::Release);
        self.gone.store(false, Ordering::Release);
        Ok(())
    }

    /// Sends one statement. A session that is gone answers
    /// [`SqlReply::ConnectionLost`] in the log and a backend error here; the next
    /// statement outside its transaction goes out on a new session.
    pub async fn exec(&self, cmd: SqlCommand) -> Result<SqlReply, LockError> {
        let mut conn = self.conn.lock().await;
        self.replace_if_lost(&mut conn).await?;
        let started = self.log.as_ref().map(StatementLog::begin);
        let result = match &mut *conn {
            Conn::MySql(c) => mysql::exec(c, &cmd).await,
            Conn::Postgres(c) => postgres::exec(c, &cmd).await,
            Conn::PgPool(p) => match p.acquire().await {
                Ok(mut c) => postgres::exec(&mut c, &cmd).await,
                Err(e) => Err(e),
            },
        };
        match cmd {
            SqlCommand::Begin | SqlCommand::BeginReadUncommitted => {
                self.in_tx.store(result.is_ok(), Ordering::Release)
            }
            // Sent is ended: committed, rolled back, or lost with its session.
            SqlCommand::Commit | SqlCommand::Rollback => self.in_tx.store(false, Ordering::Release),
            _ => {}
        }
        let recorded = match &result {
            Ok(r) => Some(r.clone()),
            Err(e) if lost(e) => {
                // A pool replaces a lost backend: only a session of its own is gone.
                if !matches!(*conn, Conn::PgPool(_)) {
                    self.gone.store(true, Ordering::Release);
                }
                Some(SqlReply::ConnectionLost)
            }
            Err(_) => None,
        };
        if let (Some(log), Some(started)) = (&self.log, started) {
            log.finish(started, 0, Some(self.id()), cmd, recorded);
        }
        result.map_err(LockError::backend)
    }

    /// Creates the lock tables (and the fencing sequence) if missing.
    pub async fn ensure_schema(&self) -> Result<(), LockError> {
        let mut conn = self.conn.lock().await;
        let r = match &mut *conn {
            Conn::MySql(c) => c.execute(mysql::SCHEMA).await.map(drop),
            Conn::Postgres(c) => c.execute(postgres::SCHEMA).await.map(drop),
            Conn::PgPool(p) => p.execute(postgres::SCHEMA).await.map(drop),
        };
        r.map_err(LockError::backend)
    }

    /// Makes sure the row `name` exists, unowned (the lease and `FOR UPDATE` locks lock
    /// a row created once, up front).
    pub async fn ensure_row(&self, name: &str) -> Result<(), LockError> {
        let mut conn = self.conn.lock().await;
        let r = match &mut *conn {
            Conn::MySql(c) => sqlx::query("INSERT IGNORE INTO locks (name, owner) VALUES (?, '')")
                .bind(name)
                .execute(c)
                .await
                .map(drop),
            Conn::Postgres(c) => sqlx::query(
                "INSERT INTO locks (name, owner) VALUES ($1, '') ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .execute(c)
            .await
            .map(drop),
            Conn::PgPool(p) => sqlx::query(
                "INSERT INTO locks (name, owner) VALUES ($1, '') ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .execute(&*p)
            .await
            .map(drop),
        };
        r.map_err(LockError::backend)
    }
}
