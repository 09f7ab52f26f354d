//! Each distinct server node once per process, and what each operation does to it,
//! remembered.
//!
//! A search meets millions of states but far fewer distinct nodes (keyspace,
//! replication stream, ghost creator), and the same few commands reach each of them
//! again and again. So the Redis model (master and replicas) and the Redlock model
//! (independent nodes) hold their nodes as [`NodeRef`]s: a copyable handle to the one
//! copy of its node in this process, compared and hashed by identity. An operation on a
//! handle ([`NodeRef::exec`], [`NodeRef::purge`], …) runs the node's own method
//! ([`Node::exec`], [`Node::purge`], …) the first time it meets that node, and later
//! answers from a table of this thread's: the semantics stay in [`Node`] and the spec,
//! and a successor state costs a few copied words instead of copied keyspaces.
//!
//! Nodes are never freed: a process keeps every distinct node it met, once each (the
//! 4.1-million-state failover row, 3 clients, 2 replicas, 2 failovers, meets between
//! 65,536 and 131,072 of them).

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{LazyLock, Mutex};

use crate::check::{encode, fingerprint, FastHash};
use crate::redis::spec::{RedisCommand, RedisReply};

use super::replication::Node;

/// A node of some model state: the one copy of an equal [`Node`] in this process.
#[derive(Clone, Copy)]
pub struct NodeRef(&'static Interned);

/// A node with what the models ask of it most.
struct Interned {
    /// Its number, in order of first meeting: equal nodes have equal ids.
    id: u32,
    node: Node,
    /// [`Node::purge_due`], asked after every step.
    purge_due: Option<u64>,
}

/// Every node met so far, each held once: the set's entries are the interned nodes
/// themselves, looked up by content (a map from `Node` to its copy held each twice).
static NODES: LazyLock<Mutex<HashSet<Known, FastHash>>> = LazyLock::new(Mutex::default);

/// An entry of [`NODES`]: an interned node, hashed and compared by its content.
struct Known(&'static Interned);

impl PartialEq for Known {
    fn eq(&self, other: &Known) -> bool {
        self.0.node == other.0.node
    }
}

impl Eq for Known {}

impl Hash for Known {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.node.hash(state);
    }
}

impl Borrow<Node> for Known {
    fn borrow(&self) -> &Node {
        &self.0.node
    }
}

/// What an operation gave: the node after it, and [`Node::exec`]'s reply and foreign flag.
type Done = (NodeRef, Option<(RedisReply, bool)>);

thread_local! {
    /// Operations done on nodes, by node.
    static DONE: RefCell<Memo> = RefCell::default();
    /// Renamings done on nodes, by node id, the renaming (one byte per client) and the
    /// value function.
    static RENAMED: RefCell<HashMap<(u32, u64, usize), NodeRef, FastHash>> = RefCell::default();
    /// The buffer an operation is encoded in.
    static KEY: RefCell<Vec<u8>> = RefCell::default();
}

/// What this thread remembers of operations: for each node id, the fingerprint of each
/// [`Op`] done on it and what it gave. Kept by node because a state's successors mostly
/// act on the same few nodes, so their answers sit together in memory (one table keyed
/// by node and operation scattered them, and cost a cache miss each). Bounded:
/// forgetting only costs running the operation again.
#[derive(Default)]
struct Memo {
    by_node: Vec<Vec<([u64; 2], Done)>>,
    len: usize,
}

impl Memo {
    fn get(&self, node: u32, op: [u64; 2]) -> Option<Done> {
        let ops = self.by_node.get(node as usize)?;
        ops.iter().find(|(k, _)| *k == op).map(|(_, d)| d.clone())
    }

    fn insert(&mut self, node: u32, op: [u64; 2], done: Done) {
        if self.len >= 1 << 21 {
            self.by_node.clear();
            self.len = 0;
        }
        let at = node as usize;
        if self.by_node.len() <= at {
            self.by_node.resize_with(at + 1, Vec::new);
        }
        self.by_node[at].push((op, done));
        self.len += 1;
    }
}

/// An operation on a node: each runs the [`Node`] method of its name.
#[derive(Hash)]
enum Op<'a> {
    Exec {
        client: u8,
        cmd: &'a RedisCommand,
        now: u64,
        release: bool,
    },
    Purge(u64),
    ReplicateOne,
    Append(&'a RedisCommand, u64, u8),
    ClearStream,
    Demote,
    Rejoin,
    ResyncFrom(NodeRef),
}

impl Op<'_> {
    fn run(&self, n: &mut Node) -> Option<(RedisReply, bool)> {
        match *self {
            Op::Exec {
                client,
                cmd,
                now,
                release,
            } => return Some(n.exec(client, cmd, now, release)),
            Op::Purge(now) => n.purge(now),
            Op::ReplicateOne => {
                n.replicate_one();
            }
            Op::Append(cmd, at, client) => n.append(cmd, at, client),
            Op::ClearStream => n.stream.clear(),
            Op::Demote => n.demote(),
            Op::Rejoin => n.rejoin(),
            Op::ResyncFrom(from) => n.resync_from(&from),
        }
        None
    }
}

impl NodeRef {
    /// The handle of `node`.
    pub fn new(node: Node) -> NodeRef {
        let mut nodes = NODES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = nodes.get(&node) {
            return NodeRef(known.0);
        }
        let interned: &'static Interned = Box::leak(Box::new(Interned {
            id: u32::try_from(nodes.len()).expect("fewer than 2^32 distinct nodes"),
            purge_due: node.purge_due(),
            node,
        }));
        nodes.insert(Known(interned));
        NodeRef(interned)
    }

    /// An empty, running server.
    pub fn empty() -> NodeRef {
        NodeRef::new(Node::new())
    }

    /// [`Node::purge_due`], computed once per node.
    pub fn due(&self) -> Option<u64> {
        self.0.purge_due
    }

    /// Replaces this node by the result of `op` on it; returns what `op` answered.
    fn apply(&mut self, op: Op) -> Option<(RedisReply, bool)> {
        let id = self.0.id;
        let key = KEY.with_borrow_mut(|buf| {
            buf.clear();
            encode(&op, buf);
            fingerprint(buf)
        });
        if let Some((next, out)) = DONE.with_borrow(|done| done.get(id, key)) {
            *self = next;
            return out;
        }
        let mut node = self.0.node.clone();
        let out = op.run(&mut node);
        *self = NodeRef::new(node);
        DONE.with_borrow_mut(|done| done.insert(id, key, (*self, out.clone())));
        out
    }

    /// [`Node::exec`].
    pub fn exec(
        &mut self,
        client: u8,
        cmd: &RedisCommand,
        now: u64,
        release: bool,
    ) -> (RedisReply, bool) {
        let op = Op::Exec {
            client,
            cmd,
            now,
            release,
        };
        self.apply(op).unwrap_or((RedisReply::Nil, false))
    }

    /// [`Node::purge`], when [`Node::purge_due`] says it changes something.
    pub fn purge(&mut self, now: u64) {
        if self.0.purge_due.is_some_and(|t| now >= t) {
            self.apply(Op::Purge(now));
        }
    }

    /// [`Node::replicate_one`].
    pub fn replicate_one(&mut self) {
        if !self.stream.is_empty() {
            self.apply(Op::ReplicateOne);
        }
    }

    /// [`Node::append`].
    pub fn append(&mut self, cmd: &RedisCommand, at: u64, client: u8) {
        self.apply(Op::Append(cmd, at, client));
    }

    /// Forgets the writes not yet applied.
    pub fn clear_stream(&mut self) {
        self.apply(Op::ClearStream);
    }

    /// [`Node::demote`].
    pub fn demote(&mut self) {
        self.apply(Op::Demote);
    }

    /// [`Node::rejoin`].
    pub fn rejoin(&mut self) {
        if !self.up {
            self.apply(Op::Rejoin);
        }
    }

    /// [`Node::rename_clients`] for at most eight clients; a node that names no client
    /// stays as it is. Remembered in a table of its own, keyed by the renaming's bytes
    /// rather than an encoded `Op`: symmetry renames every node of every state a
    /// search generates.
    pub fn rename_clients(&mut self, to: &[u8], value: fn(u8) -> String) {
        if self.creator.is_none() && self.db.keys.is_empty() {
            return;
        }
        assert!(
            to.len() <= 8,
            "a renaming packs one byte per client into a u64"
        );
        let packed = to.iter().rev().fold(0u64, |m, &c| m << 8 | u64::from(c));
        let key = (self.0.id, packed, value as usize);
        if let Some(known) = RENAMED.with_borrow(|r| r.get(&key).copied()) {
            *self = known;
            return;
        }
        let mut node = self.0.node.clone();
        node.rename_clients(to, value);
        *self = NodeRef::new(node);
        RENAMED.with_borrow_mut(|r| {
            if r.len() >= 1 << 20 {
                r.clear();
            }
            r.insert(key, *self);
        });
    }

    /// [`Node::resync_from`].
    pub fn resync_from(&mut self, from: NodeRef) {
        self.apply(Op::ResyncFrom(from));
    }
}

impl Deref for NodeRef {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.0.node
    }
}

impl PartialEq for NodeRef {
    fn eq(&self, other: &NodeRef) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for NodeRef {}

/// By id: an order of its own, consistent with equality (sorting by it is canonical).
impl Ord for NodeRef {
    fn cmp(&self, other: &NodeRef) -> std::cmp::Ordering {
        self.0.id.cmp(&other.0.id)
    }
}

impl PartialOrd for NodeRef {
    fn partial_cmp(&self, other: &NodeRef) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for NodeRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.node.fmt(f)
    }
}

impl Default for NodeRef {
    fn default() -> Self {
        NodeRef::empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::LOCK_KEY;

    fn set(v: &str) -> RedisCommand {
        RedisCommand::Set {
            key: LOCK_KEY.into(),
            value: v.into(),
            nx: true,
            px: Some(2),
        }
    }

    #[test]
    fn equal_nodes_are_one_and_operations_match_the_nodes_own() {
        let (mut a, mut b) = (NodeRef::empty(), NodeRef::empty());
        assert_eq!(a, b);
        let mut plain = Node::new();
        let want = plain.exec(0, &set("c0"), 0, false);
        assert_eq!(a.exec(0, &set("c0"), 0, false), want);
        assert_eq!(*a, plain);
        assert_ne!(a, b);
        assert_eq!(b.exec(0, &set("c0"), 0, false), want, "remembered");
        assert_eq!(
            a, b,
            "the same operation on the same node gives the same node"
        );
        a.purge(1);
        assert_eq!(a, b, "nothing has expired at 1");
        a.purge(2);
        plain.purge(2);
        assert_eq!(*a, plain);
        assert_eq!(a, NodeRef::empty());
    }
}
