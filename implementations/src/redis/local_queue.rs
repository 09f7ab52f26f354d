//! The hand-off queue of one key on one node, as `redis-lua` handles share it: a leaf,
//! so that the node can keep one per key without knowing the hand-off protocol.

use std::time::Duration;

use crate::guard::LockGuard;
use crate::handoff_queue::HandOffQueue;
use crate::lease::Lease;

/// The hand-off queue of one key on one node: waiters behind the local holder.
pub type LocalQueue = HandOffQueue<Waiting, LockGuard>;

/// What the holder needs to hand the key to a queued waiter.
///
/// Only what differs between waiters: node, key and wake-up are the queue's own, since
/// a node keeps one queue per key.
#[derive(Debug)]
pub struct Waiting {
    /// The waiter's owner identity, the value the key will hold.
    pub(crate) owner: String,
    /// The catalog id its guard carries.
    pub(crate) protocol: &'static str,
    /// The lease it asked for.
    pub(crate) lease: Lease,
    /// The TTL of that lease.
    pub(crate) ttl: Duration,
}
