//! How the client faults read: the story's line and the diagram's mark, the same in
//! every family but for the few words a family gives in its [`FaultWords`].

use crate::diagram::{client, client_state, Exchange, LaneState};

use super::{ClientFault, Process};

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
}

impl ClientFault {
    /// Client `c`'s step in a story's words.
    pub fn story(self, c: usize, w: &FaultWords) -> String {
        match self {
            ClientFault::Pause => format!("c{c} pauses{}", w.pause),
            ClientFault::Resume => format!("c{c} resumes"),
            ClientFault::Crash => format!("c{c} crashes{}", w.crash),
            ClientFault::Partition => format!(
                "c{c} is partitioned from {}: its {} are lost, its work goes on",
                w.servers, w.heartbeats
            ),
            ClientFault::Heal => format!("c{c}'s partition heals"),
        }
    }

    /// Client `c`'s step as a mark on its lane.
    pub fn mark(self, c: usize, w: &FaultWords) -> Exchange {
        let label = match self {
            ClientFault::Pause => format!("⚡ pauses{}", w.pause_mark),
            ClientFault::Resume => "resumes".to_string(),
            ClientFault::Crash => "⚡ crashes".to_string(),
            ClientFault::Partition => format!("⚡ cut off from {}", w.servers),
            ClientFault::Heal => "partition heals".to_string(),
        };
        Exchange::mark(Some(client(c)), label, self.is_fault())
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
        t
    }

    /// Client `c`'s lane: `what` it is doing, `, paused` / `, cut off` appended, the
    /// lease it believes it holds; drawn faded when it cannot act.
    pub fn lane(
        self,
        c: usize,
        what: &str,
        lease_until: Option<u64>,
        critical: bool,
        crashed: bool,
    ) -> LaneState {
        let mut status = what.to_string();
        if self.paused {
            status.push_str(", paused");
        }
        if self.partitioned {
            status.push_str(", cut off");
        }
        let impaired = self.paused || self.partitioned || crashed;
        client_state(c, status, lease_until, critical, impaired)
    }
}
