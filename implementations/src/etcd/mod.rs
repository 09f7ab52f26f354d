//! The etcd locks of the catalog on a real etcd cluster, with `etcd-client` on tokio:
//! every request is one of the spec's ([`locklab_models::etcd::spec`]) sent through an
//! [`EtcdSession`] and recorded with its window in a [`RequestLog`], as Redis commands
//! are.
//!
//! - [`session`]: the spec's requests on the wire, the lease keep-alive task, the
//!   request log.
//! - [`lease`]: a lock handle's session lease, granted at first use and kept alive.
//! - [`history`]: each request as a `command` event of a run's history.
//! - [`recipe`]: the `concurrency.Mutex` recipe behind `DistributedLock`, fenced by the
//!   key's create revision, and the `Txn`-guarded write.
//! - [`single_key`]: one key created if absent, released by name and retried after a
//!   lost reply (or guarded by its create revision).
//! - [`lock_rpc`]: etcd's server-side `Lock` RPC.
//! - [`described`]: a user's protocol file's requests.

pub mod described;
pub mod history;
pub mod lease;
pub mod lock_rpc;
pub mod recipe;
pub mod session;
pub mod single_key;

pub use described::DescribedEtcdLock;
pub use lock_rpc::LockRpcLock;
pub use recipe::RecipeLock;
pub use session::{EtcdSession, EtcdWire, Request, RequestLog};
pub use single_key::SingleKeyLock;
