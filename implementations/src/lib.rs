//! Real lock clients behind one trait, one module per backend protocol.
//!
//! - [`DistributedLock`] is the interface every lock implements (and the one a team
//!   implements to plug its own lock into the harness): acquire with a wait timeout and a
//!   [`Lease`], try-acquire, and a [`LockGuard`] that releases, renews, exposes the fencing
//!   token and reports lost ownership.
//! - [`redis`] holds every Redis protocol of the catalog, the deliberately broken ones
//!   included (documented as teaching-only).
//! - [`sql`] holds the MariaDB/MySQL and PostgreSQL locks (unique key, lease row,
//!   `GET_LOCK`, advisory, `FOR UPDATE`).
//! - [`hold_state`] is the client-side shared state (hold counts, watchdog generations),
//!   written against [`sync`] so that `--cfg loom` model-checks it; so is
//!   [`handoff_queue`], the queue through which tasks of one process hand a lock over.
//!
//! ```no_run
//! use std::time::Duration;
//! use locklab_implementations::redis::{NodeOptions, RedisNode, ReentrantLock};
//! use locklab_implementations::{DistributedLock, Lease, LockError};
//!
//! # #[tokio::main] async fn main() -> Result<(), LockError> {
//! let node = RedisNode::connect("127.0.0.1:6379", NodeOptions::default()).await?;
//! let lock = ReentrantLock::new(&node, "orders:42"); // one handle = one owner
//! let guard = lock.acquire(Duration::from_secs(5), Lease::Watchdog(Duration::from_secs(30))).await?;
//! tokio::select! {
//!     _ = async { /* the critical section */ } => {}
//!     reason = guard.lost() => { /* stop writing: the lock is gone ({reason:?}) */ }
//! }
//! guard.release().await?; // `NotHeld` here means the section was not protected throughout
//! # Ok(()) }
//! ```
//!
//! The client side imports one way, each module only from those before it: [`lease`],
//! [`box_future`], [`error`], [`ownership`], [`hold_state`]; [`held_lock`] (what a
//! protocol does with a grant) and [`hold_cell`] (a handle's hold count); the
//! watchdog; [`guard`]; [`attempt`]; [`retry`] (the waiting loop, which asks only for
//! [`retry::Retryable`]); [`lock`] (the trait, whose default `acquire` is that loop).
//!
//! The crate depends on `locklab-models` (the specs) and `locklab-traces` (histories),
//! never on the harness or the CLI.
#![warn(missing_docs)]

pub mod error;
pub mod handoff_queue;
pub mod hold_state;
pub mod sync;

pub use error::LockError;

#[cfg(all(test, loom))]
mod loom_handoff_tests;
#[cfg(all(test, loom))]
mod loom_tests;

/// Marks every item `#[cfg(not(loom))]`: a `--cfg loom` build holds only the
/// client-side state that loom model-checks (and the error type it names).
macro_rules! not_under_loom {
    ($($item:item)*) => { $(#[cfg(not(loom))] $item)* };
}

not_under_loom! {
    pub mod attempt;
    pub mod box_future;
    #[cfg(feature = "etcd")]
    pub mod etcd;
    pub mod guard;
    pub mod held_lock;
    pub mod hold_cell;
    pub mod lease;
    pub mod lock;
    pub mod ownership;
    pub mod recorder;
    pub mod redis;
    pub mod retry;
    #[cfg(feature = "sql")]
    pub mod sql;
    mod watchdog;
    #[cfg(feature = "zookeeper")]
    pub mod zk;

    pub use attempt::{Acquire, Attempt, AttemptObserver, AttemptOutcome, Unobserved};
    pub use box_future::BoxFuture;
    pub use guard::LockGuard;
    pub use held_lock::HeldLock;
    pub use lease::Lease;
    pub use lock::{Acquiring, DistributedLock, LockInfo};
    pub use ownership::{LostReason, Ownership, Renewal, RenewalObserver};
}
