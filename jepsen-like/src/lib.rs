//! locklab's Jepsen-like harness: the catalog's scenarios on real servers under real
//! faults, with the recorded history checked against the same specifications as the
//! models, and the verdict held against the model's.
//!
//! The generic part knows no family:
//! - [`family`]: a family's one face — its [`servers::Servers`] (Jepsen's DB), its
//!   clients ([`family::Client`]), the scenario's lock and its own counter;
//! - [`schedule`] and [`nemesis`]: faults as data, timed or waiting for an event of the
//!   run ("after the first grant"), carried out and recorded;
//! - [`proxy`]: the TCP proxy between clients and servers (partitions, failover);
//! - [`workload`] and [`counter`]: clients looping acquire → read-modify-write of a
//!   counter no fault reaches (fenced where the lock has tokens), or of the lock's own
//!   servers' counter → release;
//! - [`plan`]: how a scenario runs; [`random`]: faults drawn at random instead, and
//!   the shrinker; [`runner`]: one run end to end; [`agreement`]: the
//!   run against the model; [`custom`]: your own lock in a scenario; [`external`]: a
//!   lock client in any language.
//!
//! A family is a folder: [`zk`] (a ZooKeeper ensemble) is the clearest to copy; [`redis`]
//! (Redis, Sentinel, Redlock), [`sql`] (MariaDB, PostgreSQL) and [`etcd`] (a 3-node
//! cluster) follow it. [`registry`] is the one place that lists the families. The
//! `inventory-*` rows have buyers instead of the lock loop ([`sql::inventory`]): the
//! registry sends their ids there, and they reuse the runner's history check and model
//! agreement.
#![warn(missing_docs)]

pub mod agreement;
pub mod counter;
pub mod custom;
pub mod deadline;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod external;
pub mod family;
pub mod log;
pub mod nemesis;
pub mod placement;
pub mod plan;
pub mod proxy;
pub mod random;
pub mod redis;
pub mod registry;
pub mod runner;
pub mod schedule;
pub mod servers;
#[cfg(feature = "sql")]
pub mod sql;
pub mod workload;
#[cfg(feature = "zookeeper")]
pub mod zk;

pub use custom::CustomLock;
pub use error::RunError;
pub use placement::Net;
pub use registry::{run, runnable};
pub use runner::{CheckBudget, Progress, RunOptions, RunReport};
