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
    /// Taking the lock: the `[[acquire]]` steps, whose last says `granted` or `busy`.
    Acquire,
    /// Giving it back: the `[[release]]` steps, whose last says `released` or `not_held`.
    Release,
    /// Extending the lease: the `[[renew]]` steps, whose last says `renewed` or `lost`. A
    /// protocol without them never renews.
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

impl Operation {
    /// Whether a step of this operation may name `o` (`last`: it is the operation's
    /// last step, which has no next), or what to write instead.
    pub fn admits(self, o: Outcome, last: bool) -> Result<(), String> {
        if !self.outcomes().contains(&o) {
            let allowed: Vec<&str> = self.outcomes().iter().map(|o| o.key()).collect();
            return Err(format!(
                "`{}` is no outcome of {} steps: use {}",
                o.key(),
                self.key(),
                allowed.join(", ")
            ));
        }
        if o == Outcome::Next && last {
            return Err(format!(
                "`next` on the last {} step: there is no next step",
                self.key()
            ));
        }
        Ok(())
    }
}

/// Steps as a builder collected them, each with its number within its operation (from
/// 1) and whether it is that operation's last.
pub fn numbered<B>(pending: Vec<(Operation, B)>) -> Vec<(Operation, usize, bool, B)> {
    let count = |op: Operation| pending.iter().filter(|(o, _)| *o == op).count();
    let counts = [
        count(Operation::Acquire),
        count(Operation::Release),
        count(Operation::Renew),
    ];
    let mut seen = [0usize; 3];
    pending
        .into_iter()
        .map(|(op, b)| {
            let i = op as usize;
            seen[i] += 1;
            (op, seen[i], seen[i] == counts[i], b)
        })
        .collect()
}
