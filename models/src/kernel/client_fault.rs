//! The client faults: each transition with its guard and the budget it draws on,
//! written once for every family's clients.

use crate::registry::Fault;

use super::{Budget, ClientPhase, Process};

/// A fault, or the end of one, that strikes one client process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientFault {
    /// The process stops (GC, SIGSTOP), heartbeats included.
    Pause,
    /// The paused process runs again.
    Resume,
    /// The process dies for good.
    Crash,
    /// The worker hangs for good; the process, and its heartbeat, run on.
    Hang,
    /// The process is cut off from the servers; it runs on.
    Partition,
    /// The partition heals.
    Heal,
}

impl ClientFault {
    /// Every client fault and end of one.
    pub const ALL: [ClientFault; 6] = [
        ClientFault::Pause,
        ClientFault::Resume,
        ClientFault::Crash,
        ClientFault::Hang,
        ClientFault::Partition,
        ClientFault::Heal,
    ];

    /// The budget it draws on; the end of a fault draws on none.
    pub fn fault(self) -> Option<Fault> {
        match self {
            ClientFault::Pause => Some(Fault::Pause),
            ClientFault::Crash => Some(Fault::Crash),
            ClientFault::Hang => Some(Fault::Hang),
            ClientFault::Partition => Some(Fault::Partition),
            ClientFault::Resume | ClientFault::Heal => None,
        }
    }

    /// An injected fault rather than the end of one.
    pub fn is_fault(self) -> bool {
        self.fault().is_some()
    }

    /// Whether it may strike a client in `phase` whose process is `p`, with `budget`
    /// left: a fault needs its budget, and strikes only where it breaks something —
    /// a pause, a hang or a partition a holder, a crash a client that has started to hold
    /// ([`ClientPhase::started`]); none strikes twice (a paused client is not paused
    /// again). The end of a fault needs only the fault.
    pub fn enabled(self, p: &Process, budget: &Budget, phase: impl ClientPhase) -> bool {
        let (open, exposed) = match self {
            ClientFault::Pause => (!p.paused, phase.holding()),
            ClientFault::Resume => (p.paused, true),
            ClientFault::Crash => (true, phase.started()),
            ClientFault::Hang => (!p.hung && !p.paused, phase.holding()),
            ClientFault::Partition => (!p.partitioned, phase.holding()),
            ClientFault::Heal => (p.partitioned, true),
        };
        open && exposed && self.fault().is_none_or(|f| budget.has(f))
    }

    /// Strikes the client in `phase` whose process is `p` if it is
    /// [`enabled`](ClientFault::enabled), spending from `budget`; whether it did. On a
    /// crash the client does what the family's dead clients do (`die`: its phase
    /// becomes the crashed one, it forgets a lease it believed it held) and is no
    /// longer paused or hung, nothing of it being left to run; a partition outlives
    /// it, as the network does. A hang never ends: no variant undoes it.
    pub fn strike(
        self,
        p: &mut Process,
        budget: &mut Budget,
        phase: impl ClientPhase,
        die: impl FnOnce(),
    ) -> bool {
        if !self.enabled(p, budget, phase) {
            return false;
        }
        if let Some(f) = self.fault() {
            budget.spend(f);
        }
        match self {
            ClientFault::Pause => p.paused = true,
            ClientFault::Resume => p.paused = false,
            ClientFault::Partition => p.partitioned = true,
            ClientFault::Heal => p.partitioned = false,
            ClientFault::Hang => p.hung = true,
            ClientFault::Crash => {
                p.paused = false;
                p.hung = false;
                die();
            }
        }
        true
    }
}

/// Gives a family's action enum its client faults: the variants named after a
/// [`ClientFault`] (`Pause(c)`, `Crash(c)`, …, each carrying its client) are that
/// fault, any other variant is none (`client_fault`), and `client_faults(c)` lists
/// them for client `c`, in the order named here (the order the search tries them).
/// A family gains a client fault by its variant and its name here.
macro_rules! client_faults {
    ($action:ident: $($fault:ident),+ $(,)?) => {
        impl $action {
            /// Every client fault of the family, striking client `c`.
            pub fn client_faults(c: u8) -> impl Iterator<Item = $action> {
                [$($action::$fault(c)),+].into_iter()
            }

            /// The client fault this action is, and its client.
            pub fn client_fault(&self) -> Option<($crate::kernel::ClientFault, usize)> {
                match *self {
                    $($action::$fault(c) => {
                        Some(($crate::kernel::ClientFault::$fault, usize::from(c)))
                    })+
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use client_faults;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Stage;

    /// A phase that is just its stage.
    #[derive(Clone, Copy)]
    struct At(Stage);

    impl ClientPhase for At {
        fn stage(self) -> Stage {
            self.0
        }
    }

    const HOLDING: At = At(Stage::Inside(0));
    const QUEUED: At = At(Stage::Queued);

    fn one_of_each() -> Budget {
        Budget::of(&[(Fault::Pause, 1), (Fault::Crash, 1), (Fault::Partition, 1)])
    }

    #[test]
    fn a_pause_strikes_a_holder_once_within_its_budget_and_resuming_is_free() {
        let (mut p, mut b) = (Process::RUNNING, one_of_each());
        assert!(!ClientFault::Pause.strike(&mut p, &mut b, QUEUED, || {}));
        assert!(ClientFault::Pause.strike(&mut p, &mut b, HOLDING, || {}));
        assert!(p.paused && !b.has(Fault::Pause));
        assert!(
            !ClientFault::Pause.enabled(&p, &one_of_each(), HOLDING),
            "twice"
        );
        assert!(ClientFault::Resume.strike(&mut p, &mut b, QUEUED, || {}));
        assert!(
            !p.paused && !ClientFault::Pause.enabled(&p, &b, HOLDING),
            "spent"
        );
    }

    #[test]
    fn a_hang_strikes_a_holder_for_good_and_leaves_its_heartbeat_connected() {
        let mut b = Budget::of(&[(Fault::Hang, 1), (Fault::Crash, 1)]);
        let mut p = Process::RUNNING;
        assert!(!ClientFault::Hang.strike(&mut p, &mut b, QUEUED, || {}));
        assert!(ClientFault::Hang.strike(&mut p, &mut b, HOLDING, || {}));
        assert!(p.hung && !p.works() && p.connected(), "{p:?}");
        assert!(ClientFault::Crash.strike(&mut p, &mut b, HOLDING, || {}));
        assert!(!p.hung, "nothing of a dead process hangs");
    }

    #[test]
    fn a_crash_ends_a_pause_but_not_a_partition() {
        let (mut p, mut b) = (Process::RUNNING, one_of_each());
        ClientFault::Pause.strike(&mut p, &mut b, HOLDING, || {});
        ClientFault::Partition.strike(&mut p, &mut b, HOLDING, || {});
        let mut died = false;
        assert!(ClientFault::Crash.strike(&mut p, &mut b, HOLDING, || died = true));
        assert!(died && !p.paused && p.partitioned);
        assert!(ClientFault::Heal.enabled(&p, &b, At(Stage::Crashed)));
    }
}
