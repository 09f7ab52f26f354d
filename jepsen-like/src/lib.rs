//! locklab's Jepsen-like harness: the catalog's scenarios on real servers under real
//! faults, with the recorded history checked against the same specifications as the
//! models, and the verdict held against the model's.
//!
//! The generic part knows no family:
//! - [`cluster`]: what the harness needs from a family's servers ([`cluster::Cluster`])
//!   and the typed fault targets ([`cluster::Target`]);
//! - [`schedule`] and [`nemesis`]: faults as data, timed or waiting for an event of the
//!   run ("after the first grant"), carried out and recorded;
//! - [`proxy`]: the TCP proxy between clients and servers (partitions, failover);
//! - [`workload`] and [`resource`]: clients looping acquire → read-modify-write of a
//!   counter no fault reaches (fenced where the lock has tokens), or of the lock's own
//!   database row inside the locking transaction → release;
//! - [`plan`]: how a scenario runs; [`runner`]: one run end to end; [`agreement`]: the
//!   run against the model; [`custom`]: your own lock in a scenario.
//!
//! A family is a folder: [`redis`] (Redis, Sentinel, Redlock) is the worked example;
//! [`sql`] (MariaDB, PostgreSQL) and [`etcd`] (a 3-node cluster) follow it.
//! [`registry`] is the one place that lists the families. The `inventory-*` rows have
//! buyers instead of the lock loop ([`sql::inventory`]): the registry sends their ids
//! there, and they reuse the runner's history check and model agreement.

pub mod agreement;
pub mod cluster;
pub mod custom;
pub mod etcd;
pub mod external;
pub mod log;
pub mod nemesis;
pub mod plan;
pub mod proxy;
pub mod redis;
pub mod registry;
pub mod resource;
pub mod runner;
pub mod schedule;
pub mod sql;
pub mod workload;
pub mod zk;

pub use custom::{CustomLock, Endpoints};
pub use registry::{plans, run};
pub use runner::{CheckBudget, Progress, RunOptions, RunReport};

/// Why a run gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No such scenario (exit 2).
    #[error("unknown scenario {id:?} for `run`; these run on real servers: {}", known.join(", "))]
    UnknownId {
        /// What was asked.
        id: String,
        /// What can run.
        known: Vec<&'static str>,
    },
    /// A bad option (exit 2).
    #[error("{0}")]
    BadOption(String),
    /// A server is missing or would not start, a port could not be had, a client
    /// program died before `init` (exit 4: the run could not run; fix the machine or
    /// retry).
    #[error("environment: {0}")]
    Environment(String),
    /// The machine spoiled every attempt (exit 4, as [`RunError::Environment`]).
    #[error("environment unreliable, retried: {0}")]
    Unreliable(String),
    /// No answer to compare with: the model gave no verdict within its limits (exit 3).
    #[error("unknown: {0}")]
    Unknown(String),
    /// A bug in locklab.
    #[error("internal error: {0}")]
    Internal(String),
}
