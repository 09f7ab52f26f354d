//! The lock clients against real servers, one test binary with a module per subject
//! (one build and one link). Run one with `cargo test -p locklab-implementations
//! --features backends --test it sql_locks::`.

#[cfg(feature = "backends")]
mod common;

mod etcd_lock_rpc;
mod etcd_locks;
mod redis_counter;
mod redis_faults;
mod redis_handoff;
mod redis_protocols;
mod redis_reentrant;
mod redis_spec_replay;
mod redlock;
mod server_control;
mod sql_locks;
mod sql_spec_replay;
mod zk_locks;
