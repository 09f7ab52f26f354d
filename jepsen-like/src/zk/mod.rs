//! The ZooKeeper family in the harness, the clearest family to copy:
//!
//! - [`family`]: its one face to the harness, [`Zk`];
//! - [`cluster`]: a 3-server ensemble, each on a host of its own
//!   ([`crate::placement`]), its leader as the primary;
//! - [`client`]: one client's session through proxies of its own, so that a pause or a
//!   partition silences its session's pings, and its session's requests are `command`
//!   events of the history;
//! - [`counter`]: the counter node written in a `multi` that checks the holder's node;
//! - [`actions`]: the faults only ZooKeeper has (a lost create reply, restarting the
//!   servers the nemesis killed);
//! - [`tap`]: the lost create reply, read off ZooKeeper's wire protocol in the proxies;
//! - [`locks`]: which client lock a scenario uses, and how each client builds it;
//! - [`plans`]: the catalog's ZooKeeper rows that run on a real ensemble.

pub mod actions;
pub mod client;
pub mod cluster;
pub mod counter;
pub mod family;
pub mod locks;
pub mod plans;
pub mod tap;

pub use actions::ZkAction;
pub use client::ZkClient;
pub use cluster::{Shape, ZkRunCluster};
pub use family::Zk;
pub use locks::ZkLock;
