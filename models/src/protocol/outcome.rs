//! What a step's reply means, whatever the family: the outcomes a protocol file names
//! (`granted = …`, `busy = …`), which operation may name which, and what a refused
//! client does.

/// What a client does when its acquire is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OnBusy {
    /// Tries again from the first step.
    #[default]
    Retry,
    /// Gives up without entering.
    GiveUp,
    /// Runs the release steps anyway, then gives up: a release in a `finally` block
    /// around a failed acquire.
    Release,
}

/// What a reply means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Acquire, renew: go on with the operation's next step.
    Next,
    /// Acquire: the lock is the client's.
    Granted,
    /// Acquire: someone holds it (see [`OnBusy`]).
    Busy,
    /// Release: given back.
    Released,
    /// Release: the client did not hold it.
    NotHeld,
    /// Renew: the lease is extended.
    Renewed,
    /// Renew: the lock is no longer the client's.
    Lost,
}

impl Outcome {
    /// The key a protocol file names it by.
    pub fn key(self) -> &'static str {
        match self {
            Outcome::Next => "next",
            Outcome::Granted => "granted",
            Outcome::Busy => "busy",
            Outcome::Released => "released",
            Outcome::NotHeld => "not_held",
            Outcome::Renewed => "renewed",
            Outcome::Lost => "lost",
        }
    }
}

/// Which operation a step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Acquire.
    Acquire,
    /// Release.
    Release,
    /// Renew.
    Renew,
}

impl Operation {
    /// The name a protocol file uses (`[[acquire]]`).
    pub fn key(self) -> &'static str {
        match self {
            Operation::Acquire => "acquire",
            Operation::Release => "release",
            Operation::Renew => "renew",
        }
    }

    /// The outcomes a step of this operation may name.
    pub fn outcomes(self) -> &'static [Outcome] {
        match self {
            Operation::Acquire => &[Outcome::Granted, Outcome::Busy, Outcome::Next],
            Operation::Release => &[Outcome::Released, Outcome::NotHeld, Outcome::Next],
            Operation::Renew => &[Outcome::Renewed, Outcome::Lost, Outcome::Next],
        }
    }
}
