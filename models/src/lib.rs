//! locklab's models: the specifications of every lock backend and protected resource,
//! written once as pure sequential state machines ([`spec`]), and the stateright models
//! built on them, one folder per family ([`etcd`], [`inventory`], [`redis`], [`redlock`],
//! [`sql`], [`zk`]: model, narration, catalog rows), all protecting the same [`resource`].
//!
//! This crate is the root of the workspace: pure, no I/O, no printing. The history
//! checker (`locklab-traces`) and the real implementations hold their behaviour against
//! the same [`spec`] types, so a protocol's semantics live in exactly one place. The
//! names all crates share — families, faults, properties — are typed in [`registry`].
//! What every family's clients share — the client faults and their budget, where a
//! client is in its program, time's premise, what the properties read — is written
//! once in [`kernel`].
//!
//! Imports run one way: [`registry`] ← [`check`] ← [`checkable`] ← [`scenario`] ←
//! [`kernel`] ← the families ← [`catalog`].
#![warn(missing_docs)]

pub mod catalog;
pub mod check;
pub mod checkable;
pub mod diagram;
pub mod etcd;
pub mod inventory;
pub mod kernel;
pub mod progress;
pub mod protocol;
pub mod redis;
pub mod redlock;
pub mod registry;
pub mod resource;
pub mod scenario;
pub mod spec;
pub mod sql;
pub mod zk;
