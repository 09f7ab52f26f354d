//! The overselling story on real servers: buyers against one stock row, each strategy
//! written as the SQL people deploy ([`buyers`]), the row and its statements per
//! server ([`store`]), `locklab run inventory-*` ([`run`]: one purchase per buyer, the
//! history checked by the inventory spec and held against the model) and
//! `locklab bench inventory` ([`bench`]).

pub mod bench;
pub mod buyers;
pub mod run;
pub mod store;

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
}

impl Backend {
    /// Both, in the benchmark's order.
    pub const ALL: [Backend; 2] = [Backend::MariaDb, Backend::Postgres];

    /// `mariadb` or `postgres` (`None`: MariaDB); anything else is a bad option.
    pub fn parse(name: Option<&str>) -> Result<Backend, RunError> {
        match name {
            None | Some("mariadb") => Ok(Backend::MariaDb),
            Some("postgres") => Ok(Backend::Postgres),
            Some(other) => Err(RunError::BadOption(format!(
                "--backend must be mariadb or postgres, got {other:?}"
            ))),
        }
    }
}
