//! The keys every Redis lock model writes, on every node.

/// The lock's key on every node.
pub const LOCK_KEY: &str = "lock";
/// The fencing-token counter's key (`INCR`).
pub const FENCE_KEY: &str = "fence";
