//! Every Redis protocol of the catalog, one module each, on `redis` + tokio.
//!
//! Correct locks: [`lua`] (`redis-lua`), [`fenced`] (`redis-lua-fenced`), [`reentrant`]
//! (`redis-reentrant`, Redisson's hash lock with watchdog), [`redlock`] (`redlock`), and
//! [`replication`]'s `WAIT` option for the single-node ones. Teaching only — broken on
//! purpose, each documenting the fault that breaks it: [`get_set`], [`setnx_no_ttl`],
//! [`setnx_expire`], [`del_unconditional`], [`get_then_del`], [`timestamp_value`], and
//! [`reentrant::ReentrantLock::with_thread_id_owner`].
//!
//! The commands are the Redis node spec's (`locklab_models::redis::spec`), the one
//! vocabulary of Redis commands: every one goes through [`RedisNode::exec`] (put on the
//! wire by [`wire`]), which can record each [`Exchange`] (command and reply);
//! [`replay`] holds a recording against the spec with the history checker's search, and
//! [`history`] makes run-history events of it.
//!
//! The shared modules import one way, each only from those before it: [`scripts`],
//! [`wire`], [`recorder`], [`history`], [`replay`]; [`local_queue`] (the per-key
//! hand-off queue, which knows no Redis); [`node`]; [`handle`]; `key_commands` (the one-command steps
//! several protocols share: `SET … NX PX`, `SETNX`, `DEL`); [`replication`];
//! [`cas_held`] (the compare-and-* grant and its hand-over); [`handoff`] (waiting for a
//! hand-over); then the protocols.

pub mod cas_held;
pub mod del_unconditional;
pub mod fenced;
pub mod get_set;
pub mod get_then_del;
pub mod handle;
pub mod handoff;
pub mod history;
mod key_commands;
pub mod local_queue;
pub mod lua;
pub mod node;
pub mod recorder;
pub mod redlock;
pub mod reentrant;
pub mod replay;
pub mod replication;
pub mod scripts;
pub mod setnx_expire;
pub mod setnx_no_ttl;
pub mod timestamp_value;
pub mod wire;

pub use del_unconditional::DelUnconditionalLock;
pub use fenced::FencedLock;
pub use get_set::GetSetLock;
pub use get_then_del::GetThenDelLock;
pub use locklab_models::redis::spec::{RedisCommand, RedisReply};
pub use lua::LuaLock;
pub use node::{NodeOptions, RedisNode};
pub use recorder::{Exchange, Recorder};
pub use redlock::Redlock;
pub use reentrant::ReentrantLock;
pub use replay::{replay, ReplayError};
pub use replication::WaitReplicas;
pub use scripts::LockScript;
pub use setnx_expire::SetNxExpireLock;
pub use setnx_no_ttl::SetNxNoTtlLock;
pub use timestamp_value::TimestampValueLock;

use crate::lock::DistributedLock;

/// The catalog ids of the single-node protocols [`single_node`] builds.
pub const SINGLE_NODE_PROTOCOLS: [&str; 10] = [
    get_set::PROTOCOL,
    setnx_no_ttl::PROTOCOL,
    setnx_expire::PROTOCOL,
    del_unconditional::PROTOCOL,
    get_then_del::PROTOCOL,
    timestamp_value::PROTOCOL,
    lua::PROTOCOL,
    fenced::PROTOCOL,
    reentrant::PROTOCOL,
    reentrant::PROTOCOL_THREAD_ID,
];

/// A fresh handle (own owner identity) of the single-node protocol `id` on `key`, for
/// a harness that picks protocols by name. `None` for an unknown id (and for
/// `redlock`, which needs several nodes: [`Redlock::new`]). The thread-id variant uses
/// thread id 1 for every handle, which is the point of that bug.
pub fn single_node(id: &str, node: &RedisNode, key: &str) -> Option<Box<dyn DistributedLock>> {
    Some(match id {
        get_set::PROTOCOL => Box::new(GetSetLock::new(node, key)),
        setnx_no_ttl::PROTOCOL => Box::new(SetNxNoTtlLock::new(node, key)),
        setnx_expire::PROTOCOL => Box::new(SetNxExpireLock::new(node, key)),
        del_unconditional::PROTOCOL => Box::new(DelUnconditionalLock::new(node, key)),
        get_then_del::PROTOCOL => Box::new(GetThenDelLock::new(node, key)),
        timestamp_value::PROTOCOL => Box::new(TimestampValueLock::new(node, key)),
        lua::PROTOCOL => Box::new(LuaLock::new(node, key)),
        fenced::PROTOCOL => Box::new(FencedLock::new(node, key)),
        reentrant::PROTOCOL => Box::new(ReentrantLock::new(node, key)),
        reentrant::PROTOCOL_THREAD_ID => {
            Box::new(ReentrantLock::with_thread_id_owner(node, key, 1))
        }
        _ => return None,
    })
}
