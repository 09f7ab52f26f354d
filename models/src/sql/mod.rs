//! Locks built from a SQL server (MariaDB/MySQL and PostgreSQL): a unique-key row, a
//! lease row with a time predicate, `GET_LOCK`, `SELECT … FOR UPDATE`, and PostgreSQL's
//! advisory locks. Every `mysql-*`, `pg-*` and `sql-*` row of the catalog is a
//! [`SqlLockModel`] configuration: the server side ([`spec`]) and how its statements
//! read (`text.rs`), the clients' statement programs ([`protocol`]), time, sessions and
//! faults ([`model`]), the stories ([`narration`]) and the rows ([`catalog`]).

pub mod catalog;
pub mod diagram;
pub mod model;
pub mod narration;
mod progress;
pub mod protocol;
mod repeat;
pub mod spec;
mod text;

pub use catalog::SqlLock;
pub use model::{Action, Client, Dialect, Phase, SqlLockModel, SqlLockState};
pub use protocol::{Lock, Work};
