//! What a lock model's properties read off its states: each family says it once, in
//! its [`LockChecks`], and the invariants a row checks are made from that here, in
//! the registry's terms.

use stateright::Model;

use crate::registry::Property;

/// What the registry's properties read off a lock model's state.
pub trait LockChecks: Model {
    /// The clients inside the critical section (mutual exclusion: one at most).
    fn in_critical(&self, s: &Self::State) -> Vec<usize>;

    /// The client that released a lock another client held, if any.
    fn foreign_release(&self, _s: &Self::State) -> Option<u8> {
        None
    }

    /// A lock that nothing will free while a client waits for it, in words
    /// (liveness: none).
    fn orphan(&self, _s: &Self::State) -> Option<String> {
        None
    }

    /// The resource, and the counter a server keeps for guarded writes, lost no
    /// update.
    fn resource_safe(&self, s: &Self::State) -> bool;

    /// The client whose re-entry was refused, or whose lock was freed while it still
    /// held it, if any.
    fn reentrancy_broken(&self, _s: &Self::State) -> Option<u8> {
        None
    }
}

/// The clients (by index) for which `critical` holds: who is inside.
pub fn inside<C>(clients: &[C], critical: impl Fn(&C) -> bool) -> Vec<usize> {
    (0..clients.len())
        .filter(|&c| critical(&clients[c]))
        .collect()
}

/// The invariants of a lock model that a row checks (`wanted`), in the registry's
/// order.
pub fn invariants<M: LockChecks>(wanted: &[Property]) -> Vec<stateright::Property<M>> {
    checked(
        &[
            (Property::MutualExclusion, |m, s| {
                m.in_critical(s).len() <= 1
            }),
            (Property::NoForeignRelease, |m, s| {
                m.foreign_release(s).is_none()
            }),
            (Property::Liveness, |m, s| m.orphan(s).is_none()),
            (Property::ResourceSafety, |m, s| m.resource_safe(s)),
            (Property::Reentrancy, |m, s| {
                m.reentrancy_broken(s).is_none()
            }),
        ],
        wanted,
    )
}

/// An invariant: the property, and whether a state keeps it.
type Invariant<M> = (Property, fn(&M, &<M as Model>::State) -> bool);

/// The invariants of `all` that a row checks (`wanted`), in `all`'s order, as
/// stateright properties.
fn checked<M: Model>(all: &[Invariant<M>], wanted: &[Property]) -> Vec<stateright::Property<M>> {
    all.iter()
        .filter(|(p, _)| wanted.contains(p))
        .map(|(p, holds)| p.always(*holds))
        .collect()
}
