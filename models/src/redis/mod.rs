//! The Redis lock protocols, on one node or on a master with asynchronous replicas
//! behind Sentinel: every `redis-*` scenario of the catalog is a [`RedisLockModel`]
//! configuration. The server side is [`spec`], how its commands read `text.rs`; this
//! module adds the clients' step orders ([`protocol`]), replication and failover
//! ([`replication`]), time and the fault budget ([`model`]), the stories
//! ([`narration`]) and the catalog rows ([`catalog`]).

pub mod catalog;
pub mod diagram;
pub mod keys;
pub mod model;
pub mod narration;
mod progress;
pub mod protocol;
mod repeat;
pub mod replication;
pub mod shared_nodes;
pub mod spec;
mod text;
pub mod topology;
pub mod values;

pub use keys::{FENCE_KEY, LOCK_KEY};
pub use model::{Action, Client, Phase, RedisLockModel, RedisLockState};
pub use protocol::{Protocol, ValueKind};
pub use replication::Node;
pub use shared_nodes::NodeRef;
