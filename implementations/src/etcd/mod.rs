//! The etcd locks of the catalog on a real etcd cluster, with `etcd-client` on tokio:
//! every request is one of the spec's ([`locklab_models::etcd::spec`]) sent through an
//! [`EtcdSession`] and recorded with its window in a [`RequestLog`], as Redis commands
//! are.
//!
//! - [`session`]: the spec's requests on the wire, the session lease and its
//!   keep-alive task, the request log.
//! - [`history`]: each request as a `command` event of a run's history.
//! - [`recipe`]: the `concurrency.Mutex` recipe behind `DistributedLock`, fenced by the
//!   key's create revision, and the `Txn`-guarded write.

pub mod history;
pub mod recipe;
pub mod session;

pub use recipe::RecipeLock;
pub use session::{EtcdSession, EtcdWire, Request, RequestLog};
