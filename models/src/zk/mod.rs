//! Locks built from ZooKeeper: the ephemeral-sequential recipe (Curator's
//! `InterProcessMutex`) with its predecessor or parent watch, blind or protected create
//! retries, a holder that stops at SUSPENDED or only at LOST, and work outside ZooKeeper,
//! fenced by the lock node's czxid, or as a `multi` that checks the lock node. Every
//! `zk-*` row of the catalog is a [`ZkLockModel`] configuration: the ensemble
//! ([`spec`]) and how its requests read (`text.rs`), the clients, time, sessions and
//! faults ([`model`]), the stories ([`narration`]) and the rows ([`catalog`]).

pub mod catalog;
mod diagram;
pub mod model;
pub mod narration;
mod progress;
mod repeat;
pub mod spec;
mod text;

pub use catalog::ZkLock;
pub use model::{Action, Client, Phase, Recipe, WatchOn, Work, ZkLockModel, ZkLockState};
pub use spec::{ZkCommand, ZkReply, ZkSpec, ZkState};
