//! locklab's Jepsen-like harness: the catalog's scenarios on real servers under real
//! faults, with the recorded history checked against the same specifications as the
//! models, and the verdict held against the model's.
//!
//! - [`topology`]: Redis servers, replicas, Sentinels and Redlock nodes as child
//!   processes on loopback, killed with the run (also on panic and, through
//!   `locklab_implementations::testing::reaper`, on Ctrl-C).
//! - [`proxy`]: the TCP proxy between clients and servers (partitions, failover).
//! - [`schedule`] and [`nemesis`]: faults as data, carried out and recorded.
//! - [`workload`] and [`resource`]: clients looping acquire → read-modify-write of a
//!   counter no fault reaches (fenced where the lock has tokens) → release.
//! - [`plan`]: how each catalog id runs; [`runner`]: one run end to end;
//!   [`agreement`]: the run against the model; [`custom`]: your own lock in a scenario.

pub mod agreement;
pub mod custom;
pub mod log;
pub mod nemesis;
pub mod plan;
pub mod proxy;
pub mod resource;
pub mod runner;
pub mod schedule;
pub mod topology;
pub mod workload;

pub use custom::CustomLock;
pub use runner::{run, CheckBudget, Progress, RunOptions, RunReport};

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
    /// A server is missing or would not start (exit 2: fix the machine).
    #[error("environment: {0}")]
    Environment(String),
    /// The machine spoiled every attempt (exit 3: unknown).
    #[error("environment unreliable, retried: {0}")]
    Unreliable(String),
    /// A bug in locklab.
    #[error("internal error: {0}")]
    Internal(String),
}
