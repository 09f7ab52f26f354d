//! The ZooKeeper family in the harness, in the etcd family's shape:
//!
//! - [`cluster`]: a 3-server ensemble on 127.0.0.1 as a [`crate::cluster::Cluster`],
//!   its leader as the primary; each client reaches every server through proxies of
//!   its own, so that a pause or a partition silences its session's pings, and its
//!   session's requests are `command` events of the history;
//! - [`actions`]: the faults only ZooKeeper has (a lost create reply, restarting the
//!   servers the nemesis killed);
//! - [`tap`]: the lost create reply, read off ZooKeeper's wire protocol in the proxies;
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's ZooKeeper rows that run on a real ensemble.

pub mod actions;
pub mod cluster;
pub mod locks;
pub mod plans;
pub mod tap;

pub use actions::ZkAction;
pub use cluster::{Shape, ZkRunCluster};
pub use locks::ZkLock;
