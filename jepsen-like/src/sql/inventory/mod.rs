//! The overselling story on real servers: buyers against one stock, each strategy
//! written as the SQL or Redis commands people deploy ([`buyers`]), the stock and its
//! statements per server ([`store`], [`redis_stock`], started by [`server`]),
//! `locklab run inventory-*` ([`run`]: one purchase per buyer, the history checked by
//! the inventory spec and held against the model) and `locklab bench inventory`
//! ([`bench()`], its tables and plot in [`bench_table`]).

pub mod bench;
pub mod bench_table;
pub mod buyers;
pub mod redis_stock;
pub mod run;
pub mod seeds;
pub mod server;
pub mod store;
pub mod store_error;

pub use bench::{bench, BenchOptions, BenchRow, Workload, MAX_CONNECTIONS};
pub use bench_table::{plot, table};
pub use buyers::Strategy;

use locklab_models::inventory::catalog::row;
use locklab_models::inventory::{InventoryProtocol, Orders};
use locklab_models::registry::ScenarioId;

use crate::RunError;

/// An inventory row that runs on real servers: its catalog id, the strategy that buys as
/// its model's protocol does, and what each buyer orders — both read from the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The catalog row.
    pub id: ScenarioId,
    /// How buyers buy.
    pub strategy: Strategy,
    /// What each orders, and the stock at the start.
    pub orders: Orders,
}

/// The inventory rows with a real run.
const RUNNABLE: [ScenarioId; 7] = [
    ScenarioId::InventoryNoLock,
    ScenarioId::InventoryLocalMutex,
    ScenarioId::InventoryOneSql,
    ScenarioId::InventoryOptimistic,
    ScenarioId::InventoryTimestampCas,
    ScenarioId::InventoryPhantomNoLock,
    ScenarioId::InventoryPhantomOneSql,
];

impl Row {
    /// Every inventory row with a real run, in catalog order.
    pub fn all() -> impl Iterator<Item = Row> {
        RUNNABLE.into_iter().filter_map(|id| {
            let r = row(id)?;
            Some(Row {
                id,
                strategy: Strategy::of(r.protocol),
                orders: r.orders,
            })
        })
    }

    /// Row `id`, if it runs.
    pub fn of(id: ScenarioId) -> Option<Row> {
        Row::all().find(|r| r.id == id)
    }
}

impl Strategy {
    /// The strategy that buys as `protocol` does.
    pub fn of(protocol: InventoryProtocol) -> Strategy {
        match protocol {
            InventoryProtocol::NoLock => Strategy::NoLock,
            InventoryProtocol::LocalMutex => Strategy::LocalMutex,
            InventoryProtocol::OneSql => Strategy::OneSql,
            InventoryProtocol::Optimistic => Strategy::Optimistic,
            InventoryProtocol::TimestampCas => Strategy::TimestampCas,
        }
    }
}

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
