//! The etcd family in the harness, in the Redis family's shape:
//!
//! - [`family`]: its one face to the harness, [`Etcd`];
//! - [`cluster`]: a 3-node etcd cluster, each member on a host of its own
//!   ([`crate::placement`]), its leader as the primary (so
//!   `kill primary` kills the leader), its own faults carried out with requests the
//!   history records;
//! - [`client`]: one client's session through proxies of its own, every request it
//!   sends recorded as a `command` event;
//! - [`described`]: a user's etcd protocol file as the run's lock;
//! - [`counter`]: the counter key written by a `Txn` guarded by the lock key;
//! - [`actions`]: the faults only etcd has (leader churn, a waiter's lease revoked);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's etcd rows that run on a real cluster.

pub mod actions;
pub mod client;
pub mod cluster;
pub mod counter;
pub mod described;
pub mod family;
pub mod locks;
pub mod plans;

pub use actions::EtcdAction;
pub use client::EtcdClient;
pub use cluster::{EtcdRunCluster, Shape};
pub use family::Etcd;
pub use locks::EtcdLock;
