//! One allocation per distinct server node across all the states a search holds.
//!
//! A breadth-first search keeps hundreds of thousands of states in its queue but meets
//! only a few thousand distinct nodes, and a keyspace costs a few hundred bytes on the
//! heap; the Redis model (master and replicas) and the Redlock model (independent
//! nodes) both hold their nodes as `Arc<Node>` and pass each new one through [`share`].

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use crate::check::FastHash;

use super::replication::Node;

thread_local! {
    /// Nodes seen lately, so that equal nodes of different states are one allocation.
    static NODES: RefCell<HashSet<Arc<Node>, FastHash>> = RefCell::default();
}

/// Replaces `node`, if no other state holds it yet (an action just built it), by an
/// equal node already in memory, or remembers it for the next ones.
pub fn share(node: &mut Arc<Node>) {
    if Arc::strong_count(node) > 1 {
        return;
    }
    NODES.with_borrow_mut(|seen| match seen.get(node) {
        Some(known) => *node = Arc::clone(known),
        None => {
            // Bounded: forgetting only costs sharing, never a state.
            if seen.len() >= 1 << 16 {
                seen.clear();
            }
            seen.insert(Arc::clone(node));
        }
    });
}
