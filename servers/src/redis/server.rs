//! `redis-server` on a free loopback port (or a lab host's address and port 6379) with a throw-away data dir, no persistence
//! unless asked (`SAVE` before a restart that keeps data), optionally under libfaketime
//! so a nemesis can jump or speed up its clock.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program.
pub const BINARY: &str = "redis-server";

/// Its port on a lab host.
pub const PORT: u16 = 6379;

/// The family's data dirs are named `locklab-redis-…`.
pub const FAMILY: &str = "redis";

/// How to start a server beyond the defaults (loopback, no persistence, own dir).
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// Extra command-line arguments.
    pub args: Vec<String>,
    /// Run under libfaketime, its offset read from `clock` in the data dir at every
    /// clock read, so [`RedisServer::set_clock`] can jump or speed up its clock.
    pub fake_clock: bool,
    /// The lab host to run on (its namespace, its address); `None`: loopback.
    pub host: Option<crate::net::Host>,
}

/// A running redis-server.
#[derive(Debug)]
pub struct RedisServer {
    process: ServerProcess,
    config: ServerConfig,
}

/// Plain `faketime` deadlocks redis-server's jemalloc at start; with tcmalloc preloaded
/// first it works (BACKENDS.md).
const FAKETIME_PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

/// Whether a Redis server (or Sentinel) answers `PING` on `port`.
pub fn ping(port: u16) -> bool {
    ping_at(Ipv4Addr::LOCALHOST, port)
}

/// Whether a Redis server (or Sentinel) answers `PING` at `ip:port`.
pub fn ping_at(ip: Ipv4Addr, port: u16) -> bool {
    let addr = SocketAddr::from((ip, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if buf[..n].starts_with(b"+PONG"))
}

/// Runs `redis-cli -p port args…` and returns its output (for assertions and controls
/// that must not go through the code under test).
pub fn cli(port: u16, args: &[&str]) -> String {
    cli_at(Ipv4Addr::LOCALHOST, port, args)
}

/// Runs `redis-cli -h ip -p port args…` and returns its output.
pub fn cli_at(ip: Ipv4Addr, port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .arg("-h")
        .arg(ip.to_string())
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

impl RedisServer {
    /// Starts a standalone server.
    pub fn start() -> Result<Self, ServerError> {
        Self::start_with(&[])
    }

    /// Starts a replica of `master` and waits until its link to the master is up.
    pub fn start_replica_of(master: &RedisServer) -> Result<Self, ServerError> {
        let master_ip = master.process.ip().to_string();
        let s = Self::start_with(&["--replicaof", &master_ip, &master.port().to_string()])?;
        let start = Instant::now();
        while start.elapsed() < READY_TIMEOUT {
            if s.info("replication").contains("master_link_status:up") {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(ServerError::NotReady {
            binary: BINARY,
            port: s.port(),
            waited: start.elapsed(),
            log: s.process.log_tail(),
        })
    }

    /// Starts a server with extra command-line arguments.
    pub fn start_with(extra: &[&str]) -> Result<Self, ServerError> {
        Self::start_config(ServerConfig {
            args: extra.iter().map(|a| a.to_string()).collect(),
            ..ServerConfig::default()
        })
    }

    /// Starts a server as configured.
    pub fn start_config(config: ServerConfig) -> Result<Self, ServerError> {
        ServerProcess::start_on(BINARY, FAMILY, config.host.as_ref(), PORT, |process| {
            RedisServer {
                process,
                config: config.clone(),
            }
        })
    }

    /// Sets the libfaketime offset of a server started with
    /// [`ServerConfig::fake_clock`]: `"+31"` jumps its clock 31 s ahead, `"+0 x2"` runs
    /// it twice as fast. It takes effect at the server's next clock read.
    pub fn set_clock(&self, spec: &str) -> std::io::Result<()> {
        if !self.config.fake_clock {
            return Err(std::io::Error::other(
                "this server was not started under libfaketime",
            ));
        }
        crate::clock::FakeClock::in_dir(self.dir()).set(spec)
    }

    /// Runs a command through `redis-cli` and returns its output.
    pub fn cli(&self, args: &[&str]) -> String {
        cli_at(self.process.ip(), self.port(), args)
    }

    /// `INFO section`.
    pub fn info(&self, section: &str) -> String {
        self.cli(&["INFO", section])
    }
}

impl Server for RedisServer {
    process_field!();

    fn launch(&mut self) -> Result<(), ServerError> {
        let mut cmd = Command::new(BINARY);
        cmd.arg("--port")
            .arg(self.port().to_string())
            .arg("--bind")
            .arg(self.process.ip().to_string())
            .arg("--save")
            .arg("")
            .arg("--appendonly")
            .arg("no")
            .arg("--repl-diskless-sync-delay")
            .arg("0")
            .arg("--dir")
            .arg(self.dir());
        if self.config.fake_clock {
            crate::clock::FakeClock::in_dir(self.dir()).wrap(&mut cmd, FAKETIME_PRELOAD)?;
        }
        if self.process.host().is_some() {
            // Reached from the other hosts of its lab, never from beyond it.
            cmd.arg("--protected-mode").arg("no");
        }
        cmd.args(&self.config.args);
        self.process.spawn(cmd)?;
        let (ip, port) = (self.process.ip(), self.port());
        self.process.wait_ready(READY_TIMEOUT, || ping_at(ip, port))
    }

    /// `SAVE`: the snapshot a restart with data loads.
    fn persist(&mut self) {
        self.cli(&["SAVE"]);
    }

    /// The RDB snapshot `SAVE` writes.
    fn state(&self) -> Option<PathBuf> {
        Some(self.dir().join("dump.rdb"))
    }
}
