//! The Redis lock protocols, on one node or on a master with asynchronous replicas
//! behind Sentinel: every `redis-*` scenario of the catalog is a [`RedisLockModel`]
//! configuration. The server side is [`spec`]; this module adds the
//! clients' step orders ([`protocol`]), replication and failover ([`replication`]), time
//! and the fault budget.

pub mod model;
pub mod protocol;
pub mod replication;
pub mod spec;

pub use model::{Action, Client, Phase, RedisLockModel, RedisLockState, Resource};
pub use protocol::{Protocol, ValueKind};
pub use replication::Node;

/// The lock's key on every node.
pub const LOCK_KEY: &str = "lock";
/// The fencing-token counter's key (`INCR`).
pub const FENCE_KEY: &str = "fence";
