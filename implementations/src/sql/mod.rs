//! The SQL locks of the catalog on real MariaDB/MySQL and PostgreSQL servers, with
//! `sqlx` on tokio: every statement is one of the spec's ([`locklab_models::sql::spec`])
//! sent through a [`Session`] and, when a [`StatementLog`] is attached, recorded with
//! its window — as Redis commands are.
//!
//! One file per wire protocol ([`mysql`], [`postgres`]: how each spec statement is
//! written for that server), the connection over both ([`session`]), the statement
//! log ([`log`]) and the locks ([`locks`]).

pub mod locks;
pub mod log;
pub mod mysql;
pub mod postgres;
pub mod session;

pub use locks::{
    advisory_key, reap, InProcessTxLock, LeaseLock, SessionLock, TxLock, UniqueKeyLock,
};
pub use log::{SqlWire, Statement, StatementLog};
pub use session::Session;
