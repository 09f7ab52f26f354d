//! locklab's models: the specifications of every lock backend and protected resource,
//! written once as pure sequential state machines ([`spec`]), and the stateright models
//! built on them.
//!
//! This crate is the root of the workspace: pure, no I/O, no printing. The history
//! checker (`locklab-traces`) and the real implementations hold their behaviour against
//! the same [`spec`] types, so a protocol's semantics live in exactly one place.

pub mod catalog;
pub mod check;
pub mod inventory;
pub mod redis;
pub mod redlock;
pub mod spec;
