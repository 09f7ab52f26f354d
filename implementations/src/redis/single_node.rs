//! The single-node protocols of the catalog as a type, for a harness or a test that
//! picks a protocol by its catalog id: the id is parsed once ([`FromStr`]), and
//! building a lock matches on the variant, never on the string.

use std::fmt;
use std::str::FromStr;

use super::{
    del_unconditional, fenced, get_set, get_then_del, lua, reentrant, setnx_expire, setnx_no_ttl,
    timestamp_value, DelUnconditionalLock, FencedLock, GetSetLock, GetThenDelLock, LuaLock,
    RedisNode, ReentrantLock, SetNxExpireLock, SetNxNoTtlLock, TimestampValueLock,
};
use crate::lock::DistributedLock;

/// A single-node Redis protocol (`redlock`, which needs several nodes, is not one:
/// [`super::Redlock::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SingleNode {
    /// `redis-get-set`.
    GetSet,
    /// `redis-setnx-no-ttl`.
    SetNxNoTtl,
    /// `redis-setnx-expire`.
    SetNxExpire,
    /// `redis-del-unconditional`.
    DelUnconditional,
    /// `redis-get-then-del`.
    GetThenDel,
    /// `redis-timestamp-value`.
    TimestampValue,
    /// `redis-lua`.
    Lua,
    /// `redis-lua-fenced`.
    Fenced,
    /// `redis-reentrant`.
    Reentrant,
    /// `redis-reentrant-thread-id`: every handle is thread 1 of no process, which is
    /// the point of that bug.
    ReentrantThreadId,
}

impl SingleNode {
    /// Every one, in catalog order.
    pub const ALL: [SingleNode; 10] = [
        SingleNode::GetSet,
        SingleNode::SetNxNoTtl,
        SingleNode::SetNxExpire,
        SingleNode::DelUnconditional,
        SingleNode::GetThenDel,
        SingleNode::TimestampValue,
        SingleNode::Lua,
        SingleNode::Fenced,
        SingleNode::Reentrant,
        SingleNode::ReentrantThreadId,
    ];

    /// The catalog id (the `protocol` of the lock's [`LockInfo`](crate::LockInfo)).
    pub fn id(self) -> &'static str {
        match self {
            SingleNode::GetSet => get_set::PROTOCOL,
            SingleNode::SetNxNoTtl => setnx_no_ttl::PROTOCOL,
            SingleNode::SetNxExpire => setnx_expire::PROTOCOL,
            SingleNode::DelUnconditional => del_unconditional::PROTOCOL,
            SingleNode::GetThenDel => get_then_del::PROTOCOL,
            SingleNode::TimestampValue => timestamp_value::PROTOCOL,
            SingleNode::Lua => lua::PROTOCOL,
            SingleNode::Fenced => fenced::PROTOCOL,
            SingleNode::Reentrant => reentrant::PROTOCOL,
            SingleNode::ReentrantThreadId => reentrant::PROTOCOL_THREAD_ID,
        }
    }

    /// A fresh handle (its own owner identity) on `key`, with the plain constructor.
    pub fn build(self, node: &RedisNode, key: &str) -> Box<dyn DistributedLock> {
        match self {
            SingleNode::GetSet => Box::new(GetSetLock::new(node, key)),
            SingleNode::SetNxNoTtl => Box::new(SetNxNoTtlLock::new(node, key)),
            SingleNode::SetNxExpire => Box::new(SetNxExpireLock::new(node, key)),
            SingleNode::DelUnconditional => Box::new(DelUnconditionalLock::new(node, key)),
            SingleNode::GetThenDel => Box::new(GetThenDelLock::new(node, key)),
            SingleNode::TimestampValue => Box::new(TimestampValueLock::new(node, key)),
            SingleNode::Lua => Box::new(LuaLock::new(node, key)),
            SingleNode::Fenced => Box::new(FencedLock::new(node, key)),
            SingleNode::Reentrant => Box::new(ReentrantLock::new(node, key)),
            SingleNode::ReentrantThreadId => {
                Box::new(ReentrantLock::with_thread_id_owner(node, key, 1))
            }
        }
    }
}

impl fmt::Display for SingleNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for SingleNode {
    type Err = String;

    fn from_str(id: &str) -> Result<Self, String> {
        SingleNode::ALL
            .into_iter()
            .find(|p| p.id() == id)
            .ok_or_else(|| format!("{id} is not a single-node Redis protocol"))
    }
}
