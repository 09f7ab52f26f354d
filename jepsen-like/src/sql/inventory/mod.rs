//! The overselling story on real servers: buyers against one stock, each strategy
//! written as the SQL or Redis commands people deploy ([`buyers`]), the stock and its
//! statements per server ([`store`], [`redis_stock`], started by [`server`]),
//! `locklab run inventory-*` ([`run`]: one purchase per buyer, the history checked by
//! the inventory spec and held against the model) and `locklab bench inventory`
//! ([`bench()`]).

pub mod bench;
pub mod buyers;
pub mod redis_stock;
pub mod run;
pub mod server;
pub mod store;
pub mod store_error;

pub use bench::{bench, table, BenchOptions, BenchRow};
pub use buyers::Strategy;

use crate::RunError;

/// The server an inventory row runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// MariaDB (the default).
    MariaDb,
    /// PostgreSQL.
    Postgres,
    /// Redis (the `stock` keys).
    Redis,
}

impl Backend {
    /// Every server, in the benchmark's order.
    pub const ALL: [Backend; 3] = [Backend::MariaDb, Backend::Postgres, Backend::Redis];

    /// `mariadb`, `postgres` or `redis` (`None`: MariaDB); anything else is a bad
    /// option.
    pub fn parse(name: Option<&str>) -> Result<Backend, RunError> {
        let Some(name) = name else {
            return Ok(Backend::MariaDb);
        };
        Backend::ALL
            .into_iter()
            .find(|b| b.history().name() == name)
            .ok_or_else(|| {
                RunError::BadOption(format!(
                    "--backend must be mariadb, postgres or redis, got {name:?}"
                ))
            })
    }

    /// The history header's `backend`.
    pub fn history(self) -> locklab_models::registry::Backend {
        use locklab_models::registry::Backend as History;
        match self {
            Backend::MariaDb => History::Mariadb,
            Backend::Postgres => History::Postgres,
            Backend::Redis => History::Redis,
        }
    }

    /// `mariadb`, `postgres` or `redis`.
    pub fn name(self) -> &'static str {
        self.history().name()
    }
}
