//! The ZooKeeper locks of the catalog on a real ZooKeeper server or ensemble, with
//! `zookeeper-client` on tokio.
//!
//! - [`recipe`]: the ephemeral-sequential recipe (Curator's `InterProcessMutex`) behind
//!   `DistributedLock`, written on the client's primitives: a node
//!   `/lock/<owner>-n-<sequence>` created ephemeral and sequential in the client's
//!   session, the lowest sequence owns, a waiter watches only the node just before its
//!   own; the node's `czxid` is the fencing token.

pub mod recipe;

/// The client library, for the harness that builds the sessions.
pub use zookeeper_client as client;

pub use recipe::{connect, RecipeLock};
