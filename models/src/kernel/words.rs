//! How the client faults read: the story's line and the diagram's mark, the same in
//! every family but for the few words a family gives in its [`FaultWords`].

use std::fmt::Display;

use crate::diagram::{client, client_state, Exchange, LaneState};

use super::{ClientFault, ClientPhase, Process};

/// What a family says about its client faults where families differ.
#[derive(Clone, Copy, Debug)]
pub struct FaultWords {
    /// What follows "c0 pauses" in a story: how it stops and what stops with it.
    pub pause: &'static str,
    /// What follows "⚡ pauses" on the diagram.
    pub pause_mark: &'static str,
    /// What follows "c0 crashes" in a story: how it dies, and who notices.
    pub crash: &'static str,
    /// What a partition cuts a client off from ("the cluster").
    pub servers: &'static str,
    /// The heartbeats a cut-off client loses ("keep-alives").
    pub heartbeats: &'static str,
    /// What keeps the lock alive while a hung worker's process runs on, as it goes on
    /// ("its pings go on", "its connection stays open").
    pub alive: &'static str,
    /// The same, short, for the diagram's mark ("pings go on").
    pub alive_mark: &'static str,
}

impl FaultWords {
    /// A step in a story's words, if it is a client fault (`fault`: the fault and its
    /// client, as a family's `Action::client_fault` gives them).
    pub fn story(&self, fault: Option<(ClientFault, usize)>) -> String {
        let Some((f, c)) = fault else {
            return String::new();
        };
        match f {
            ClientFault::Pause => format!("c{c} pauses{}", self.pause),
            ClientFault::Resume => format!("c{c} resumes"),
            ClientFault::Crash => format!("c{c} crashes{}", self.crash),
            ClientFault::Partition => format!(
                "c{c} is partitioned from {}: its {} are lost, its work goes on",
                self.servers, self.heartbeats
            ),
            ClientFault::Heal => format!("c{c}'s partition heals"),
            ClientFault::Hang => format!(
                "c{c}'s worker hangs for good (a deadlock, a call that never returns) while its process runs on: {}",
                self.alive
            ),
        }
    }

    /// A step as a mark on its client's lane, if it is a client fault.
    pub fn mark(&self, fault: Option<(ClientFault, usize)>) -> Exchange {
        let Some((f, c)) = fault else {
            return Exchange::default();
        };
        let label = match f {
            ClientFault::Pause => format!("⚡ pauses{}", self.pause_mark),
            ClientFault::Resume => "resumes".to_string(),
            ClientFault::Crash => "⚡ crashes".to_string(),
            ClientFault::Partition => format!("⚡ cut off from {}", self.servers),
            ClientFault::Heal => "partition heals".to_string(),
            ClientFault::Hang => format!("⚡ worker hangs ({})", self.alive_mark),
        };
        Exchange::mark(Some(client(c)), label, f.is_fault())
    }
}

impl Process {
    /// What a story appends to the client's line: ` [PAUSED]`, ` [PARTITIONED]`.
    pub fn tags(self) -> String {
        let mut t = String::new();
        if self.paused {
            t.push_str(" [PAUSED]");
        }
        if self.partitioned {
            t.push_str(" [PARTITIONED]");
        }
        if self.hung {
            t.push_str(" [HUNG]");
        }
        t
    }

    /// The lane of client `c` in `phase`: `what` it is doing, `, paused` / `, cut off`
    /// appended, the lease it believes it holds; drawn faded when it cannot act.
    pub fn lane(
        self,
        c: usize,
        what: &str,
        lease_until: Option<u64>,
        phase: impl ClientPhase,
    ) -> LaneState {
        let mut status = what.to_string();
        if self.paused {
            status.push_str(", paused");
        }
        if self.partitioned {
            status.push_str(", cut off");
        }
        if self.hung {
            status.push_str(", hung");
        }
        let impaired = self.paused || self.partitioned || self.hung || phase.crashed();
        LaneState {
            cut: self.partitioned,
            ..client_state(c, status, lease_until, phase.critical(), impaired)
        }
    }
}

/// What a story says of a client that believes it holds a lease until `lease_until`
/// and presents a fencing `token` (`None`: none taken): `, believes it holds until
/// t=4, token 2`.
pub fn belief(lease_until: Option<u64>, token: Option<impl Display>) -> String {
    let lease = lease_until
        .map(|d| format!(", believes it holds until t={d}"))
        .unwrap_or_default();
    match token {
        Some(t) => format!("{lease}, token {t}"),
        None => lease,
    }
}
