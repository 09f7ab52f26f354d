//! The overselling story: buyers and a stock row, with no lock, a per-process mutex,
//! one conditional `UPDATE`, or optimistic CAS. Every `inventory-*` scenario of the
//! catalog is an [`InventoryModel`] configuration: the model ([`model`]), its stories
//! ([`narration`]) and the rows ([`catalog`]).

pub mod catalog;
pub mod diagram;
pub mod model;
pub mod narration;

pub use model::{
    Buyer, InventoryAction, InventoryModel, InventoryModelState, InventoryProtocol, Orders, Step,
};
