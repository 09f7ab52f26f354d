//! The server a stock lives on, started for one run or benchmark: MariaDB or
//! PostgreSQL with the `stock` table, or Redis with the `stock` and `stock:version`
//! keys. Dropping it stops the server.

use locklab_servers::mariadb::MariaDbServer;
use locklab_servers::postgres::PostgresServer;
use locklab_servers::redis::RedisServer;
use locklab_servers::Server;

use super::store::{schema, REDIS_STOCK, REDIS_VERSION};
use super::Backend;
use crate::sql::cluster::{MariaDb, Postgres, SqlKind};
use crate::RunError;

/// The server process.
enum Running {
    MariaDb(MariaDbServer),
    Postgres(PostgresServer),
    Redis(RedisServer),
}

impl Running {
    fn server(&self) -> &dyn Server {
        match self {
            Running::MariaDb(s) => s,
            Running::Postgres(s) => s,
            Running::Redis(s) => s,
        }
    }
}

/// A running stock server and the URL its buyers connect to.
pub struct StockServer {
    server: Running,
    /// What buyers connect to (`mysql://…`, `postgres://…`, `redis://…`).
    pub url: String,
    /// Which server.
    pub backend: Backend,
}

impl StockServer {
    /// Starts `backend`'s server on its own loopback port and data dir: a stock has
    /// no fault between servers to stage, and a benchmark measures the server, not a
    /// bridge.
    pub fn start(backend: Backend) -> Result<StockServer, RunError> {
        let env = |e: locklab_servers::ServerError| RunError::Environment(e.to_string());
        let server = match backend {
            Backend::MariaDb => Running::MariaDb(MariaDb::start(false, None).map_err(env)?),
            Backend::Postgres => Running::Postgres(Postgres::start(false, None).map_err(env)?),
            Backend::Redis => Running::Redis(RedisServer::start().map_err(env)?),
        };
        let addr = server.server().addr();
        let url = match backend {
            Backend::MariaDb => MariaDb::url(&addr),
            Backend::Postgres => Postgres::url(&addr),
            Backend::Redis => format!("redis://{addr}/"),
        };
        Ok(StockServer {
            server,
            url,
            backend,
        })
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        self.server.server().addr()
    }

    /// The server's own log, for `--keep`.
    pub fn log(&self) -> String {
        self.server.server().log()
    }

    /// A fresh stock of `units`, version 0, before the buyers start.
    pub fn reset(&self, units: i64) -> Result<(), RunError> {
        let op = |r: Result<String, String>| r.map(drop).map_err(RunError::Environment);
        match &self.server {
            Running::MariaDb(s) => op(MariaDb::sql(s, &schema(true, units))),
            Running::Postgres(s) => op(Postgres::sql(s, &schema(false, units))),
            Running::Redis(_) => {
                let fail = |e: redis::RedisError| {
                    RunError::Environment(format!("setting the stock on {}: {e}", self.url))
                };
                let client = redis::Client::open(self.url.as_str()).map_err(fail)?;
                let mut c = client.get_connection().map_err(fail)?;
                redis::cmd("MSET")
                    .arg(REDIS_STOCK)
                    .arg(units)
                    .arg(REDIS_VERSION)
                    .arg(0)
                    .query::<()>(&mut c)
                    .map_err(fail)
            }
        }
    }
}
