//! Redis Sentinel (`redis-server FILE --sentinel`): three of them watch a master and
//! promote a replica when it dies. Never faulted by the harness; what it decides is
//! read back through [`Sentinel::master_addr`].

use std::path::PathBuf;
use std::process::Command;

use std::net::Ipv4Addr;

use super::server::{cli_at, ping_at, BINARY, FAMILY};
use crate::net::Host;
use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// Its port on a lab host.
pub const PORT: u16 = 26379;

/// A running Sentinel.
#[derive(Debug)]
pub struct Sentinel {
    process: ServerProcess,
    master_name: String,
    monitor: String,
}

impl Sentinel {
    /// Starts a Sentinel watching the master at `127.0.0.1:master_port` as
    /// `master_name`, with a quorum of 2 and Sentinel's fastest useful timings
    /// (down after 1 s, failover timeout 3 s).
    pub fn start(master_name: &str, master_port: u16) -> Result<Self, ServerError> {
        Self::start_on(None, master_name, Ipv4Addr::LOCALHOST, master_port)
    }

    /// As [`Sentinel::start`], on lab host `host` (when given), watching the master at
    /// `master_ip:master_port`.
    pub fn start_on(
        host: Option<&Host>,
        master_name: &str,
        master_ip: Ipv4Addr,
        master_port: u16,
    ) -> Result<Self, ServerError> {
        let monitor = format!(
            "sentinel monitor {master_name} {master_ip} {master_port} 2\n\
             sentinel down-after-milliseconds {master_name} 1000\n\
             sentinel failover-timeout {master_name} 3000"
        );
        ServerProcess::start_on(BINARY, FAMILY, host, PORT, |process| Sentinel {
            process,
            master_name: master_name.to_string(),
            monitor: monitor.clone(),
        })
    }

    /// Runs a command through `redis-cli` against this Sentinel.
    pub fn cli(&self, args: &[&str]) -> String {
        cli_at(self.process.ip(), self.port(), args)
    }

    /// The master's `host:port` as this Sentinel names it now.
    pub fn master_addr(&self) -> Option<String> {
        let out = self.cli(&["SENTINEL", "get-master-addr-by-name", &self.master_name]);
        let mut lines = out.lines();
        match (lines.next(), lines.next()) {
            (Some(h), Some(p)) if !h.is_empty() => Some(format!("{h}:{p}")),
            _ => None,
        }
    }

    /// A field of `SENTINEL master NAME` (`num-other-sentinels`, `num-slaves`, …).
    pub fn master_field(&self, field: &str) -> Option<String> {
        let info = self.cli(&["SENTINEL", "master", &self.master_name]);
        let lines: Vec<&str> = info.lines().collect();
        lines
            .iter()
            .position(|l| *l == field)
            .and_then(|i| lines.get(i + 1))
            .map(|v| v.to_string())
    }

    /// Whether this Sentinel is in TILT mode now or has been (its log says `+tilt`):
    /// the machine stalled and its decisions mean nothing.
    pub fn tilted(&self) -> bool {
        self.cli(&["INFO", "sentinel"]).contains("sentinel_tilt:1") || self.log().contains("+tilt")
    }
}

impl Server for Sentinel {
    process_field!();

    fn launch(&mut self) -> Result<(), ServerError> {
        // Sentinel rewrites its file, so it gets a fresh one in its own dir.
        let path = self.dir().join("sentinel.conf");
        std::fs::write(
            &path,
            format!(
                "port {}\nbind {}\nprotected-mode no\ndir {}\n{}\n",
                self.port(),
                self.process.ip(),
                self.dir().display(),
                self.monitor
            ),
        )?;
        let mut cmd = Command::new(BINARY);
        cmd.arg(&path).arg("--sentinel");
        self.process.spawn(cmd)?;
        let (ip, port) = (self.process.ip(), self.port());
        self.process.wait_ready(READY_TIMEOUT, || ping_at(ip, port))
    }

    /// Sentinel's state is its rewritten configuration: it starts over from the
    /// monitor line.
    fn state(&self) -> Option<PathBuf> {
        None
    }
}
