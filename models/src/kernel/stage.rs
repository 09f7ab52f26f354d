//! Where a client is in its lock program, in the terms every family shares: a family
//! places each of its phases on a [`Stage`], and who is inside, who holds the lock, who
//! waits for it and who still runs are read off that, the same way in every family.

/// A client's place in any lock program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Running, neither queued for the lock nor holding it: starting, or sending a
    /// release again after a lost reply.
    Running,
    /// Asking for the lock, or queued for it.
    Queued,
    /// Holding the lock outside its critical section: taking a token, waiting for
    /// replicas, releasing.
    Holding,
    /// Inside its critical section, at step `n` of its work (read, then write).
    Inside(u8),
    /// Finished, or gave up.
    Done,
    /// Crashed for good.
    Crashed,
}

impl Stage {
    /// Holding the lock, inside its critical section or not.
    pub fn holds(self) -> bool {
        matches!(self, Stage::Holding | Stage::Inside(_))
    }
}

/// A family's client phase, placed on the [`Stage`]s.
pub trait ClientPhase: Copy {
    /// Where this phase is.
    fn stage(self) -> Stage;

    /// Inside the critical section.
    fn critical(self) -> bool {
        matches!(self.stage(), Stage::Inside(_))
    }

    /// Holding the lock as far as the client knows.
    fn holding(self) -> bool {
        self.stage().holds()
    }

    /// Queued for the lock.
    fn waiting(self) -> bool {
        self.stage() == Stage::Queued
    }

    /// Still running its program (so still keeping a lease or session alive).
    fn running(self) -> bool {
        !matches!(self.stage(), Stage::Done | Stage::Crashed)
    }

    /// Where a crash leaves something behind: holding, or (where a family says so)
    /// midway through an acquire of several steps.
    fn started(self) -> bool {
        self.holding()
    }

    /// Crashed for good.
    fn crashed(self) -> bool {
        self.stage() == Stage::Crashed
    }
}
