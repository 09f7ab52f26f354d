//! Redlock: a client locks a majority of independent Redis nodes (each a
//! [`crate::redis::spec`] node) within a validity window. Every `redlock*` scenario of
//! the catalog is a [`RedlockModel`] configuration: the model ([`model`]), its stories
//! ([`narration`]) and the rows ([`catalog`]).

pub mod catalog;
pub mod diagram;
pub mod model;
pub mod narration;
mod progress;
mod repeat;
mod symmetry;
#[cfg(test)]
mod tests;

pub use model::{RedlockModel, RedlockState, RlAction, RlClient, RlNode, RlPhase};
