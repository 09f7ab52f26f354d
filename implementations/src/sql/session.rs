//! One database connection — one server session — of either dialect, through which a
//! lock sends the spec's statements, each recorded with its window when a
//! [`StatementLog`] is attached. A session lock or a transaction lives on exactly one
//! of these, which is why every lock handle owns its own.

use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_models::sql::Dialect;
use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;
use sqlx::Executor;
use std::sync::atomic::{AtomicBool, Ordering};

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
    id: u64,
    dialect: Dialect,
    log: Option<StatementLog>,
    /// Set once a statement found the session gone: the server ended it, so its open
    /// transaction rolled back and nothing sent on it can commit any more.
    gone: AtomicBool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("dialect", &self.dialect)
            .field("id", &self.id)
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

impl Session {
    /// Connects; statements are recorded in `log` when given.
    pub async fn connect(url: &str, log: Option<StatementLog>) -> Result<Session, LockError> {
        let dialect = dialect_of(url)?;
        let url = url.replacen("mariadb://", "mysql://", 1);
        let (conn, id) = match dialect {
            Dialect::MySql => {
                let (c, id) = mysql::connect(&url).await.map_err(LockError::backend)?;
                (Conn::MySql(c), id)
            }
            Dialect::Postgres => {
                let (c, id) = postgres::connect(&url).await.map_err(LockError::backend)?;
                (Conn::Postgres(c), id)
            }
        };
        Ok(Session {
            conn: Mutex::new(conn),
            id,
            dialect,
            log,
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
            id: 0,
            dialect: Dialect::Postgres,
            log,
            gone: AtomicBool::new(false),
        })
    }

    /// The server's id of this session (`CONNECTION_ID()`, `pg_backend_pid()`): what
    /// `KILL CONNECTION` and `pg_terminate_backend` take (0 for a pool: no one session).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether a statement found this session gone (killed, terminated, its socket
    /// closed): its transaction, if one was open, certainly rolled back.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// The server's dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Sends one statement. A session that is gone answers
    /// [`SqlReply::ConnectionLost`] in the log and a backend error here.
    pub async fn exec(&self, cmd: SqlCommand) -> Result<SqlReply, LockError> {
        let mut conn = self.conn.lock().await;
        let started = self.log.as_ref().map(StatementLog::begin);
        let result = match &mut *conn {
            Conn::MySql(c) => mysql::exec(c, &cmd).await,
            Conn::Postgres(c) => postgres::exec(c, &cmd).await,
            Conn::PgPool(p) => match p.acquire().await {
                Ok(mut c) => postgres::exec(&mut c, &cmd).await,
                Err(e) => Err(e),
            },
        };
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
            log.finish(started, 0, Some(self.id), cmd, recorded);
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
