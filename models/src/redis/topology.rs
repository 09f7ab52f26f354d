//! The replication topology over the model's shared nodes: a master's write sent to
//! every replica's stream, `WAIT`'s count of replicas that applied it, and Sentinel's
//! promotion. What one node does with a write is [`Node`]'s.

use crate::redis::spec::RedisCommand;

use super::replication::Node;
use super::shared_nodes::NodeRef;

/// Sends a write to every running replica's stream (the master itself has none).
pub fn propagate(nodes: &mut [NodeRef], master: usize, cmd: &RedisCommand, at: u64, client: u8) {
    if !cmd.is_write() {
        return;
    }
    for (i, n) in nodes.iter_mut().enumerate() {
        if i != master && n.up {
            n.append(cmd, at, client);
        }
    }
}

/// How many running replicas have applied every write up to `offset` (writes counted
/// since the current master was promoted): `WAIT`'s answer.
pub fn acked(nodes: &[NodeRef], master: usize, master_offset: u32, offset: u32) -> u32 {
    let applied = |n: &Node| master_offset.saturating_sub(n.stream.len() as u32);
    nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| *i != master && n.up && applied(n) >= offset)
        .count() as u32
}

/// Sentinel promotes `replica`: it keeps what it applied and drops what was in flight,
/// the old master leaves the topology, and the other replicas resynchronise from the new
/// master (a full sync: they become copies of it).
pub fn promote(nodes: &mut [NodeRef], old_master: usize, replica: usize) {
    nodes[replica].clear_stream();
    nodes[old_master].demote();
    let new_master = nodes[replica];
    for (i, n) in nodes.iter_mut().enumerate() {
        if i != replica && n.up {
            n.resync_from(new_master);
        }
    }
}
