//! What every client model hands its narration: a step's next state with what it
//! sent.

/// A step's visible effect, for stories: the state after it, and the request it sent
/// with the reply (`X`, in the family's own terms), if it sent one.
pub struct Effect<S, X> {
    /// The state after the step.
    pub state: S,
    /// What it sent and got back.
    pub sent: Option<X>,
}

impl<S, X> Effect<S, X> {
    /// A step that sent nothing.
    pub fn plain(state: S) -> Self {
        Effect { state, sent: None }
    }
}
