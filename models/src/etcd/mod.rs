//! Locks built from etcd (v3 API): the `concurrency.Mutex` recipe on a session lease,
//! etcd's own `Lock` RPC, a single-key lock, with the work outside etcd, fenced by the
//! lock key's create revision, or as a `Txn` guarded by it. Every `etcd-*` row of the
//! catalog is an [`EtcdLockModel`] configuration: the cluster ([`spec`]) and how its
//! requests read (`text.rs`), the clients, time, leases and faults ([`model`]), the
//! stories ([`narration`]) and the rows ([`catalog`]).

pub mod catalog;
mod described;
mod diagram;
pub mod model;
pub mod narration;
mod progress;
mod repeat;
pub mod spec;
mod text;

pub use catalog::EtcdLock;
pub use model::{Action, Client, EtcdLockModel, EtcdLockState, Lock, Phase, Work};
pub use spec::{EtcdCommand, EtcdReply, EtcdSpec, EtcdState};
