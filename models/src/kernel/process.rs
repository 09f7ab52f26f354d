//! A client process as the client faults leave it: stopped, cut off, or neither.

/// What the client faults leave on a client process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Process {
    /// Stopped by a pause (GC, SIGSTOP): it runs nothing, heartbeats included.
    pub paused: bool,
    /// Cut off from the servers: it runs on, but nothing it sends gets through.
    pub partitioned: bool,
    /// Its worker hangs for good: the program takes no further step, while the rest of
    /// the process — the heartbeat that keeps its session, lease or key alive — runs on.
    pub hung: bool,
}

impl Process {
    /// A process no fault has struck.
    pub const RUNNING: Process = Process {
        paused: false,
        partitioned: false,
        hung: false,
    };

    /// It reaches the servers: neither stopped nor cut off, so its heartbeats (etcd
    /// keep-alives, ZooKeeper pings) arrive.
    pub fn connected(self) -> bool {
        !self.paused && !self.partitioned
    }

    /// Its program may take a step: neither stopped nor hung (a cut-off client's steps
    /// are the family's to judge: it may work on outside the servers).
    pub fn works(self) -> bool {
        !self.paused && !self.hung
    }
}
