//! Every Redis protocol of the catalog, one module each, on `redis` + tokio.
//!
//! Correct locks: [`lua`] (`redis-lua`), [`fenced`] (`redis-lua-fenced`), [`reentrant`]
//! (`redis-reentrant`, Redisson's hash lock with watchdog), [`redlock`] (`redlock`), and
//! [`replication`]'s `WAIT` option for the single-node ones. Teaching only — broken on
//! purpose, each documenting the fault that breaks it: [`get_set`], [`setnx_no_ttl`],
//! [`setnx_expire`], [`del_unconditional`], [`get_then_del`], [`timestamp_value`], and
//! [`reentrant::ReentrantLock::with_thread_id_owner`]. [`SingleNode`] names the
//! single-node ones as a type, for whoever picks one by catalog id.
//!
//! The commands are the Redis node spec's (`locklab_models::redis::spec`), the one
//! vocabulary of Redis commands: every one goes through [`RedisNode::exec`] (put on the
//! wire by [`wire`]), which can record each [`Exchange`] (command and reply);
//! [`replay`](mod@replay) holds a recording against the spec with the history checker's search, and
//! [`history`] makes run-history events of it. [`sniff`] reads the same commands off
//! another program's traffic ([`resp`]: the wire protocol), so an external client's
//! commands are recorded as locklab's own are.
//!
//! The shared modules import one way, each only from those before it: [`scripts`],
//! [`wire`], [`recorder`], [`history`], [`replay`](mod@replay); [`local_queue`] (the per-key
//! hand-off queue, which knows no Redis); [`node`]; [`handle`]; `key_commands` (the one-command steps
//! several protocols share: `SET … NX PX`, `SETNX`, `DEL`); [`replication`];
//! [`cas_held`] (the compare-and-* grant and its hand-over); [`handoff`] (waiting for a
//! hand-over); then the protocols; last [`single_node`], which builds them.

pub mod cas_held;
pub mod del_unconditional;
pub mod described;
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
pub mod resp;
pub mod scripts;
pub mod setnx_expire;
pub mod setnx_no_ttl;
pub mod single_node;
pub mod sniff;
pub mod timestamp_value;
pub mod wire;

pub use del_unconditional::DelUnconditionalLock;
pub use described::DescribedLock;
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
pub use single_node::SingleNode;
pub use timestamp_value::TimestampValueLock;
