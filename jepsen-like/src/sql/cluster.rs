//! One SQL server for a run — MariaDB or PostgreSQL, started as a child process with
//! its own data dir, on a host of its own (or a free loopback port) — as [`Servers`]. The two servers differ
//! in how clients reach them (the URL), how the holder's session is found and killed,
//! and their tools; [`SqlKind`] says those, and [`SqlCluster`] is the rest.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use locklab_implementations::recorder::event_recorder;
use locklab_implementations::sql::{mysql, postgres, Session};
use locklab_servers::net::{Host, Lab};
use locklab_servers::{MariaDbServer, PostgresServer, Server, ServerError};

use locklab_models::registry::Backend;

use super::actions::{SqlAction, RUN_KEY};
use super::client::SqlClient;
use crate::family::CommandLog;
use crate::placement::{self, Net};
use crate::servers::Servers;
use crate::RunError;

/// What the run needs made before the clients start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The lock takes a row made once, up front (lease, `FOR UPDATE`); a unique-key
    /// lock must find none.
    pub lock_row: bool,
    /// A reaper job deletes lock rows older than this (ms), every 100 ms.
    pub reaper_ms: Option<u64>,
    /// Every client's statements go through one application pool of this many
    /// backends (PostgreSQL), instead of a session of its own.
    pub pool: Option<u32>,
}

/// One SQL server kind.
pub trait SqlKind: Send + Sync + 'static {
    /// Its process.
    type Server: Server + 'static;
    /// The history header's `backend`.
    const BACKEND: Backend;
    /// Whether its clock can be faked ([`SqlKind::start`] with `fake_clock`).
    const FAKES_CLOCK: bool;
    /// Starts it, under libfaketime when `fake_clock`, on `host` when given.
    fn start(fake_clock: bool, host: Option<&Host>) -> Result<Self::Server, ServerError>;
    /// Moves the clock of a server started under libfaketime (`"+3"`: 3 s ahead).
    fn set_clock(server: &Self::Server, offset: &str) -> Result<(), String>;
    /// The URL a client uses through the proxy at `addr`.
    fn url(addr: &str) -> String;
    /// Runs SQL as the operator, for set-up and faults.
    fn sql(server: &Self::Server, sql: &str) -> Result<String, String>;
    /// The tables, the fencing sequence and (if asked) the lock's row.
    fn schema(lock_row: bool) -> String;
    /// The query that names the session holding the lock `key` (empty or `NULL`: none).
    fn holder_query(key: &str) -> String;
    /// The statement that kills session `id`.
    fn kill_query(id: u64) -> String;
    /// The reaper's statement: delete lock rows older than `ms`.
    fn reap_query(ms: u64) -> String;
    /// The server binary, for its version.
    const BINARY: &'static str;
}

/// The MySQL-dialect server (`mysql://` URLs): sessions killed with `KILL CONNECTION`, the
/// holder named by `IS_USED_LOCK` or by the transaction holding row locks.
#[derive(Debug)]
pub struct MariaDb;

/// PostgreSQL.
#[derive(Debug)]
pub struct Postgres;

/// Why PostgreSQL's clock is not faked.
const NO_PG_CLOCK: &str = "PostgreSQL does not run under libfaketime here: under an offset ahead its timers (statement_timeout) stop firing, which changes more than its clock";

impl SqlKind for MariaDb {
    type Server = MariaDbServer;
    const BACKEND: Backend = Backend::Mariadb;
    const FAKES_CLOCK: bool = true;
    const BINARY: &'static str = locklab_servers::mariadb::BINARY;

    fn start(fake_clock: bool, host: Option<&Host>) -> Result<MariaDbServer, ServerError> {
        MariaDbServer::start_on(fake_clock, host)
    }

    fn set_clock(server: &MariaDbServer, offset: &str) -> Result<(), String> {
        server.set_clock(offset).map_err(|e| e.to_string())
    }

    fn url(addr: &str) -> String {
        let (user, pw) = locklab_servers::mariadb::USER;
        let db = locklab_servers::mariadb::DATABASE;
        format!("mysql://{user}:{pw}@{addr}/{db}")
    }

    fn sql(server: &MariaDbServer, sql: &str) -> Result<String, String> {
        server.sql(sql).map_err(|e| e.to_string())
    }

    fn schema(lock_row: bool) -> String {
        let row = if lock_row {
            format!("; INSERT IGNORE INTO locks (name, owner) VALUES ('{RUN_KEY}', '')")
        } else {
            String::new()
        };
        format!(
            "USE {}; {}{row}",
            locklab_servers::mariadb::DATABASE,
            mysql::SCHEMA
        )
    }

    fn holder_query(key: &str) -> String {
        format!(
            "SELECT COALESCE(IS_USED_LOCK('{key}'), (SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_rows_locked > 0 LIMIT 1))"
        )
    }

    fn kill_query(id: u64) -> String {
        format!("KILL CONNECTION {id}")
    }

    fn reap_query(ms: u64) -> String {
        format!(
            "DELETE FROM {}.locks WHERE created < NOW(6) - INTERVAL {} MICROSECOND",
            locklab_servers::mariadb::DATABASE,
            ms.saturating_mul(1000)
        )
    }
}

impl SqlKind for Postgres {
    type Server = PostgresServer;
    const BACKEND: Backend = Backend::Postgres;
    const FAKES_CLOCK: bool = false;
    const BINARY: &'static str = "postgres";

    /// Never under libfaketime: its timers stop firing under an offset ahead
    /// (`locklab_servers::clock`), which would change more than its clock.
    fn start(fake_clock: bool, host: Option<&Host>) -> Result<PostgresServer, ServerError> {
        if fake_clock {
            return Err(ServerError::Io(std::io::Error::other(NO_PG_CLOCK)));
        }
        PostgresServer::start_on(host)
    }

    fn set_clock(_server: &PostgresServer, _offset: &str) -> Result<(), String> {
        Err(NO_PG_CLOCK.into())
    }

    fn url(addr: &str) -> String {
        let user = locklab_servers::postgres::USER;
        format!("postgres://{user}@{addr}/{user}")
    }

    fn sql(server: &PostgresServer, sql: &str) -> Result<String, String> {
        server.sql(sql).map_err(|e| e.to_string())
    }

    fn schema(lock_row: bool) -> String {
        let row = if lock_row {
            format!(
                "; INSERT INTO locks (name, owner) VALUES ('{RUN_KEY}', '') ON CONFLICT DO NOTHING"
            )
        } else {
            String::new()
        };
        format!("{}{row}", postgres::SCHEMA)
    }

    fn holder_query(key: &str) -> String {
        // The run's only advisory locks are its clients' (on `key`), and the only
        // backend idle inside a transaction is a FOR UPDATE holder between statements.
        let _ = key;
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted \
         UNION ALL SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' LIMIT 1"
            .to_string()
    }

    fn kill_query(id: u64) -> String {
        format!("SELECT pg_terminate_backend({id})")
    }

    fn reap_query(ms: u64) -> String {
        format!(
            "DELETE FROM locks WHERE created < clock_timestamp() - interval '{ms} milliseconds'"
        )
    }
}

/// A running SQL server of kind `K`. Dropping it stops the server.
pub struct SqlCluster<K: SqlKind> {
    server: K::Server,
    reaper_ms: Option<u64>,
    pool: Option<u32>,
    /// The run's one pool, made by the first client that connects.
    shared: Arc<std::sync::Mutex<Option<Arc<Session>>>>,
    /// The application's in-process lock every client shares.
    app_lock: Arc<tokio::sync::Mutex<()>>,
    kind: PhantomData<K>,
    /// The server's host, if it has one; dropped after the server (last field).
    lab: Option<Lab>,
}

/// MariaDB for a run.
pub type MariaDbCluster = SqlCluster<MariaDb>;

/// PostgreSQL for a run.
pub type PostgresCluster = SqlCluster<Postgres>;

impl<K: SqlKind> SqlCluster<K> {
    /// One client's session on the server through the proxy at `addrs[0]`, every
    /// statement going into the history as a `command` event as its reply comes (the
    /// statements of a shared pool under the client that made the pool).
    pub(super) fn connect_client(
        &self,
        addrs: &[String],
        commands: CommandLog,
    ) -> impl std::future::Future<Output = Result<SqlClient, RunError>> + Send {
        // Owned before the future: the servers themselves are not shared across threads.
        let url = addrs.first().map(|a| K::url(a));
        let (pool, shared) = (self.pool, Arc::clone(&self.shared));
        let app_lock = Arc::clone(&self.app_lock);
        let CommandLog { process, log } = commands;
        let statements = event_recorder(process, log.base(), move |e| log.record_stamped(e));
        async move {
            let url = url.ok_or_else(|| RunError::Internal("no SQL endpoint".into()))?;
            let made = shared.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let session = match (pool, made) {
                (Some(_), Some(pool)) => {
                    return Ok(SqlClient {
                        session: pool,
                        app_lock,
                    })
                }
                (Some(size), None) => Session::connect_pool(&url, size, Some(statements)).await,
                (None, _) => Session::connect(&url, Some(statements)).await,
            }
            .map_err(|e| RunError::Environment(format!("connecting to {url}: {e}")))?;
            let session = Arc::new(session);
            if pool.is_some() {
                *shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
            }
            Ok(SqlClient { session, app_lock })
        }
    }

    /// The session holding the lock `key`, if any.
    pub fn holder(&self, key: &str) -> Option<u64> {
        let out = K::sql(&self.server, &K::holder_query(key)).ok()?;
        out.lines().next()?.trim().parse().ok()
    }
}

impl<K: SqlKind> Servers for SqlCluster<K> {
    type Shape = Shape;
    type Action = SqlAction;

    fn start(shape: &Shape, fake_clock: bool, net: Net) -> Result<Self, RunError> {
        let name = K::BACKEND.to_string();
        let lab = placement::lab(&[&name], net, None)?;
        let host = lab.as_ref().and_then(|l| l.hosts().first());
        let server =
            K::start(fake_clock, host).map_err(|e| RunError::Environment(e.to_string()))?;
        K::sql(&server, &K::schema(shape.lock_row)).map_err(RunError::Environment)?;
        Ok(SqlCluster {
            server,
            reaper_ms: shape.reaper_ms,
            pool: shape.pool,
            shared: Arc::default(),
            app_lock: Arc::default(),
            kind: PhantomData,
            lab,
        })
    }

    fn node_names(&self) -> Vec<String> {
        vec![K::BACKEND.to_string()]
    }

    fn node(&mut self, i: usize) -> Option<&mut dyn Server> {
        (i == 0).then_some(&mut self.server as &mut dyn Server)
    }

    fn primary(&self) -> Option<usize> {
        Some(0)
    }

    fn client_nodes(&self) -> Vec<usize> {
        vec![0]
    }

    fn holds_key(&self, i: usize, key: &str) -> bool {
        i == 0 && self.holder(key).is_some()
    }

    fn set_clock(&mut self, i: usize, offset: &str) -> Result<(), String> {
        if i != 0 {
            return Err(format!("no node {i}"));
        }
        K::set_clock(&self.server, offset)
    }

    fn apply(&mut self, action: &SqlAction) -> Result<(), String> {
        match action {
            SqlAction::KillHolderSession => {
                let id = self
                    .holder(RUN_KEY)
                    .ok_or_else(|| format!("no session holds {RUN_KEY}"))?;
                K::sql(&self.server, &K::kill_query(id)).map(drop)
            }
            SqlAction::StopReaper => match self.reaper_ms.take() {
                Some(_) => Ok(()),
                None => Err("this run has no reaper job".into()),
            },
        }
    }

    /// The reaper job, when the shape has one (errors are the next tick's to retry).
    fn tick(&mut self, _proxies: &[(usize, crate::proxy::ProxyControl)], _log: &crate::log::Log) {
        if let Some(ms) = self.reaper_ms {
            let _ = K::sql(&self.server, &K::reap_query(ms));
        }
    }

    fn describe(&self) -> String {
        let host = if self.lab.is_some() {
            " (on a host of its own)"
        } else {
            ""
        };
        format!("{} on {}{host}", K::BACKEND, self.server.addr())
    }

    fn tools(&self) -> Vec<(String, String)> {
        let version = std::process::Command::new(K::BINARY)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        vec![(K::BACKEND.to_string(), version)]
    }

    fn keep_logs(&self, dir: &Path) {
        let _ = std::fs::write(dir.join(format!("{}.log", K::BACKEND)), self.server.log());
    }
}
