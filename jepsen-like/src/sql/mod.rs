//! The SQL family in the harness, in the Redis family's shape:
//!
//! - [`cluster`]: one MariaDB or one PostgreSQL server as a [`crate::cluster::Cluster`]
//!   ([`MariaDbCluster`], [`PostgresCluster`]: one type per server, because
//!   `Cluster::connect` knows only the proxied addresses, and the URL a client needs
//!   differs per server);
//! - [`actions`]: the fault only a database has here — the server kills the lock
//!   holder's session (`KILL CONNECTION`, `pg_terminate_backend`);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's SQL rows that run on real servers;
//! - [`inventory`]: the `inventory-*` rows, buyers instead of a lock loop, and the
//!   inventory benchmark.

pub mod actions;
pub mod cluster;
pub mod inventory;
pub mod locks;
pub mod plans;

pub use actions::SqlAction;
pub use cluster::{MariaDbCluster, PostgresCluster, SqlCluster, SqlKind};
pub use locks::SqlLock;
