//! The Redis family in the harness, the worked example of a family folder:
//!
//! - [`cluster`]: the servers — one node; a master with replicas watched by three
//!   Sentinels (followed on failover); or independent Redlock nodes — as a
//!   [`crate::cluster::Cluster`];
//! - [`actions`]: the faults only Redis has (cutting replication with the ACL trick);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's Redis and Redlock rows as run plans.

pub mod actions;
pub mod cluster;
pub mod locks;
pub mod plans;

pub use actions::RedisAction;
pub use cluster::{RedisCluster, Shape};
pub use locks::RedisLock;
