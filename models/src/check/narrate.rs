//! What a model adds to stateright's [`Model`] so its counterexamples can be told: each
//! state and step in words, and as a row of the sequence diagram. How the search stores
//! states is [`super::Symmetry`]'s, not this trait's.

use std::fmt::Debug;
use std::hash::Hash;

use stateright::Model;

use crate::diagram::{Exchange, Lane, LaneKind, LaneState, Scene};
use crate::registry::Property;

/// What a model adds to stateright's [`Model`] so its counterexamples can be told.
pub trait Narrate: Model
where
    Self::State: Clone + Hash + Eq + Debug,
    Self::Action: Clone + Debug,
{
    /// One line per actor (clock, each client, each node, the resource).
    fn describe_state(&self, state: &Self::State) -> Vec<String>;

    /// What happened, in words.
    fn describe_action(&self, state: &Self::State, action: &Self::Action) -> String;

    /// Whether the action is an injected fault rather than normal behaviour.
    fn is_fault(&self, action: &Self::Action) -> bool;

    /// The closing line: why the property broke, read off the path.
    fn why(&self, property: Property, path: &[(Option<Self::Action>, Self::State)]) -> String;

    /// The diagram's participants. The default is one lane that carries each step's
    /// words, for a family that does not draw its actors yet.
    fn lanes(&self, _state: &Self::State) -> Vec<Lane> {
        vec![Lane::new(DEFAULT_LANE, "system", LaneKind::Node)]
    }

    /// Every lane's state, in lane order (the default draws none).
    fn lane_states(&self, _state: &Self::State) -> Vec<LaneState> {
        Vec::new()
    }

    /// The model clock, for models that have one.
    fn now(&self, _state: &Self::State) -> Option<u64> {
        None
    }

    /// What the action sent to whom and what came back, or where it struck. The
    /// default marks the step's words on the single default lane.
    fn exchange(&self, state: &Self::State, action: &Self::Action) -> Exchange {
        Exchange::mark(
            Some(DEFAULT_LANE.to_string()),
            self.describe_action(state, action),
            self.is_fault(action),
        )
    }

    /// The diagram row of `state`, reached by `exchange`.
    fn scene(&self, state: &Self::State, exchange: Exchange) -> Scene {
        Scene {
            now: self.now(state),
            exchange,
            lanes: self.lane_states(state),
        }
    }
}

/// The lane [`Narrate`]'s defaults draw on.
pub const DEFAULT_LANE: &str = "system";

/// Whether a step of `path` is an action `f` picks out: which fault a closing line
/// ([`Narrate::why`]) blames.
pub fn happened<A, S>(path: &[(Option<A>, S)], f: impl Fn(&A) -> bool) -> bool {
    path.iter().any(|(a, _)| a.as_ref().is_some_and(&f))
}

/// Two of the clients `inside` the critical section, as a closing line names them.
pub fn pair(inside: &[usize]) -> String {
    match inside {
        [a, b, ..] => format!("c{a} and c{b}"),
        _ => "two clients".to_string(),
    }
}
