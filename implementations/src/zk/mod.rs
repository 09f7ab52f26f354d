//! The ZooKeeper locks of the catalog on a real ZooKeeper server or ensemble, with
//! `zookeeper-client` on tokio: every request is one of the spec's
//! ([`locklab_models::zk::spec`]) sent through a [`ZkSession`] and recorded with its
//! window, as etcd's and Redis's are.
//!
//! - [`session`]: the spec's requests on the wire, watches, the request log;
//! - [`recipe`]: the ephemeral-sequential recipe (Curator's `InterProcessMutex`) behind
//!   `DistributedLock`, written as a model [`Recipe`](locklab_models::zk::Recipe) says
//!   (owner id in the node name or a blind create retry; predecessor or parent watch;
//!   stop at SUSPENDED or only at LOST); the node's `czxid` is the fencing token;
//! - [`library`]: `zookeeper-client`'s own `Client::lock` behind `DistributedLock`;
//! - [`sniff`]: the same requests read off another program's traffic ([`jute`]: the
//!   wire encoding), so an external client's ZooKeeper requests are recorded as
//!   locklab's own are.

pub mod jute;
pub mod library;
pub mod recipe;
pub mod session;
pub mod sniff;

/// The client library, for the harness that builds the sessions.
pub use zookeeper_client as client;

pub use library::LibraryLock;
pub use recipe::{connect, make_lock_dir, RecipeLock};
pub use session::{Request, RequestLog, Woken, ZkSession, ZkWatch, ZkWire};
