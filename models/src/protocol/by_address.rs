//! A described protocol as a model holds it: one per model, living as long as the
//! process, so compared and hashed by its address — hashing its steps with every state
//! would cost the search dearly.

/// A reference to a protocol that lives as long as the process, equal only to itself.
pub struct ByAddress<T: 'static>(pub &'static T);

impl<T> Clone for ByAddress<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ByAddress<T> {}

impl<T> PartialEq for ByAddress<T> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl<T> Eq for ByAddress<T> {}

impl<T> std::hash::Hash for ByAddress<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state);
    }
}

/// A protocol's name, which is all a model's `Debug` says of it.
pub trait Named {
    /// What the protocol calls itself (a protocol file's `name`, or the builder's
    /// argument), as reports print it.
    fn name(&self) -> &str;
}

impl<T: Named> std::fmt::Debug for ByAddress<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Described({:?})", self.0.name())
    }
}
