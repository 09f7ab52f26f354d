//! The SQL family in the harness, in the Redis family's shape:
//!
//! - [`family`]: its one face to the harness, per server kind ([`MariaDbSql`],
//!   [`PostgresSql`]: one type per server, because the URL a client needs and the way
//!   the holder's session is found and killed differ per server);
//! - [`cluster`]: one MariaDB or one PostgreSQL server;
//! - [`client`]: one client's session (or the run's pool);
//! - [`counter`]: the `counter` row the work writes inside the locking transaction;
//! - [`actions`]: the fault only a database has here — the server kills the lock
//!   holder's session (`KILL CONNECTION`, `pg_terminate_backend`);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's SQL rows that run on real servers;
//! - [`inventory`]: the `inventory-*` rows, buyers instead of a lock loop, and the
//!   inventory benchmark.

pub mod actions;
pub mod client;
pub mod cluster;
pub mod counter;
pub mod family;
pub mod inventory;
pub mod locks;
pub mod plans;

pub use actions::SqlAction;
pub use client::SqlClient;
pub use cluster::{MariaDbCluster, PostgresCluster, SqlCluster, SqlKind};
pub use family::{MariaDbSql, PostgresSql, Sql};
pub use locks::SqlLock;
