//! The Redis family in the harness (Redis, Sentinel, Redlock):
//!
//! - [`family`]: its one face to the harness, [`Redis`];
//! - [`cluster`]: the servers — one node; a master with replicas watched by three
//!   Sentinels (followed on failover); or independent Redlock nodes;
//! - [`client`]: one client's connected nodes;
//! - [`actions`]: the faults only Redis has (cutting replication with the ACL trick);
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's Redis and Redlock rows as run plans.

pub mod actions;
pub mod client;
pub mod cluster;
pub mod described;
pub mod family;
pub mod locks;
pub mod plans;

pub use actions::RedisAction;
pub use client::RedisClient;
pub use cluster::{RedisCluster, Shape};
pub use family::Redis;
pub use locks::RedisLock;
