//! What the search stores of a state: its canonical form, so that states which cannot
//! be told apart are stored once. Apart from telling stories ([`super::Narrate`]): a
//! model may exploit symmetry without changing how its steps read, and the reverse.

use std::hash::Hash;

use stateright::Model;

use super::encode;

/// How a model's states are stored by the search. The defaults store every state as it
/// is: a model without interchangeable actors implements it empty.
pub trait Symmetry: Model
where
    Self::State: Clone + Hash,
{
    /// A representative of the state's class: states with one representative must have
    /// the same futures up to names and the same verdicts (identity unless clients or
    /// nodes are interchangeable, or the model resets values no step reads again).
    fn canonical(&self, state: &Self::State) -> Self::State {
        state.clone()
    }

    /// Appends the [`encode`]d canonical form of `state` to `out`: what the search
    /// stores and compares. A model without symmetry may override it with
    /// `encode(state, out)` to spare a clone of every generated state.
    fn encode_canonical(&self, state: &Self::State, out: &mut Vec<u8>) {
        encode(&self.canonical(state), out);
    }
}
