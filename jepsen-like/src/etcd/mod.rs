//! The etcd family in the harness, in the Redis family's shape:
//!
//! - [`cluster`]: a 3-node etcd cluster on 127.0.0.1 as a [`crate::cluster::Cluster`],
//!   its leader as the primary (so `kill primary` kills the leader), every request a
//!   client sends recorded as a `command` event;
//! - [`actions`]: the faults only etcd has (none yet: the rows use the generic ones);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's etcd rows that run on a real cluster.

pub mod actions;
pub mod cluster;
pub mod locks;
pub mod plans;

pub use actions::EtcdAction;
pub use cluster::{EtcdRunCluster, Shape};
pub use locks::EtcdLock;
