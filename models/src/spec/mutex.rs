//! Knossos's mutex: the lock a Jepsen `:acquire`/`:release` history is checked against.
//!
//! It knows no owner and no lease: `acquire` succeeds only when the mutex is free,
//! `release` only when it is held, by anyone. This is what a Jepsen user means by
//! `--model mutex`, and it is weaker than locklab's own [`LockSpec`](super::LockSpec)
//! (which also demands that only the holder releases and that tokens increase): a
//! history may pass this one and fail that one, never the other way round.

use super::{outcomes, Outcomes, Spec, Window};

/// The mutex spec (`knossos.model/mutex`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MutexSpec;

/// What a client asks of the mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutexInput {
    /// Take the mutex.
    Acquire,
    /// Give it back (anybody may).
    Release,
}

/// What the mutex answers. Knossos has no refusal: an operation that could not take
/// effect is inconsistent, and a Jepsen `:fail` is dropped before the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutexOutput {
    /// The operation took effect.
    Done,
}

impl Spec for MutexSpec {
    /// Whether the mutex is held.
    type State = bool;
    type Input = MutexInput;
    type Output = MutexOutput;

    fn init(&self) -> bool {
        false
    }

    #[inline]
    fn step(&self, held: &bool, input: &MutexInput, _at: Window) -> Outcomes<MutexOutput, bool> {
        match (input, held) {
            (MutexInput::Acquire, false) => outcomes![(MutexOutput::Done, true)],
            (MutexInput::Release, true) => outcomes![(MutexOutput::Done, false)],
            _ => Outcomes::new(),
        }
    }

    fn describe_state(held: &bool) -> String {
        if *held { "held" } else { "free" }.to_string()
    }

    fn describe(input: &MutexInput, output: Option<&MutexOutput>) -> String {
        let call = match input {
            MutexInput::Acquire => "acquire",
            MutexInput::Release => "release",
        };
        match output {
            Some(MutexOutput::Done) => format!("{call} -> ok"),
            None => format!("{call} -> ?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_free_mutex_is_acquired_and_only_a_held_one_released() {
        let s = MutexSpec;
        let at = Window::at(0);
        assert_eq!(s.step(&false, &MutexInput::Acquire, at).len(), 1);
        assert!(s.step(&true, &MutexInput::Acquire, at).is_empty());
        assert_eq!(s.step(&true, &MutexInput::Release, at).len(), 1);
        assert!(s.step(&false, &MutexInput::Release, at).is_empty());
    }
}
