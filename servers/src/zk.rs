//! ZooKeeper (Debian's 3.8 jars under `/usr/share/java`, run by `java`) as one
//! standalone server or an ensemble of three on 127.0.0.1 — or each server on a host of
//! its own in a [`Lab`], so that a partition can cut one off — each server with its own
//! `myid`, data dir, client, quorum and election ports, a small JVM heap and the
//! BACKENDS.md tick (500 ms: session timeouts from 1 s to 10 s). Readiness and the
//! leader are read with the `srvr` four-letter word, never through the client under test.
//!
//! Killing a server does not expire sessions (the ensemble keeps them); expiry comes
//! from a client that stops talking, which is the client's and the harness's business.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::net::Lab;
use crate::port::{self, PortLease};
use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program that runs the server.
pub const BINARY: &str = "java";

/// Its client port on a lab host.
pub const PORT: u16 = 2181;

/// Its quorum port on a lab host (followers to the leader).
pub const QUORUM_PORT: u16 = 2888;

/// Its leader-election port on a lab host.
pub const ELECTION_PORT: u16 = 3888;

/// The jar the server's classes come from (its manifest lists jute, netty and the rest).
pub const JAR: &str = "/usr/share/java/zookeeper.jar";

/// The logging jars the server needs beside it.
const LOG_JARS: [&str; 2] = [
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
];

/// The family's data dirs are named `locklab-zookeeper-…`.
pub const FAMILY: &str = "zookeeper";

/// `tickTime` in milliseconds: the session timeout a client may ask for is bounded to
/// 2…20 ticks.
pub const TICK_MS: u64 = 500;

/// Log to stdout, which the process sends to its `server.log`.
const LOG4J: &str = "log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1}: %m%n
";

/// What a server says it is in its `srvr` answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A single server.
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A member of an ensemble that is not its leader (`Mode: follower`).
    Follower,
}

/// One ZooKeeper server.
#[derive(Debug)]
pub struct ZkServer {
    process: ServerProcess,
    myid: u32,
    quorum_port: PortLease,
    election_port: PortLease,
    /// The `server.N=…` lines of its ensemble; empty for a standalone server.
    ensemble: String,
    /// Runs under libfaketime ([`ZkServer::set_clock`] moves its clocks, the monotonic
    /// one its session tracker reads included).
    fake_clock: bool,
}

/// A four-letter word sent to a client port on 127.0.0.1; the answer.
pub fn four_letter(port: u16, word: &str) -> Option<String> {
    four_letter_at(Ipv4Addr::LOCALHOST, port, word)
}

/// A four-letter word sent to a client address; the answer.
pub fn four_letter_at(ip: Ipv4Addr, port: u16, word: &str) -> Option<String> {
    let addr = SocketAddr::from((ip, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(1000))).ok()?;
    s.write_all(word.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The `Mode:` line of a `srvr` answer.
fn mode_of(srvr: &str) -> Option<Mode> {
    let line = srvr.lines().find_map(|l| l.strip_prefix("Mode: "))?;
    match line.trim() {
        "standalone" => Some(Mode::Standalone),
        "leader" => Some(Mode::Leader),
        "follower" => Some(Mode::Follower),
        _ => None,
    }
}

impl ZkServer {
    fn reserve(myid: u32, lab: Option<&Lab>, fake_clock: bool) -> Result<Self, ServerError> {
        let host = lab
            .map(|l| l.host(&format!("zk{myid}")).cloned())
            .transpose()
            .map_err(|e| ServerError::Io(std::io::Error::other(e.to_string())))?;
        Ok(ZkServer {
            quorum_port: port::for_host(host.is_some(), QUORUM_PORT)?,
            election_port: port::for_host(host.is_some(), ELECTION_PORT)?,
            process: ServerProcess::reserve_on(BINARY, FAMILY, host, PORT)?,
            myid,
            ensemble: String::new(),
            fake_clock,
        })
    }

    /// Sets the server's clock offset (`"+3"`: 3 s ahead), read at its next clock read;
    /// an error for a server not started under libfaketime.
    pub fn set_clock(&self, spec: &str) -> Result<(), ServerError> {
        crate::clock::FakeClock::set_faked(self.fake_clock, self.dir(), spec)
    }

    /// Its `myid` (1, 2, 3).
    pub fn myid(&self) -> u32 {
        self.myid
    }

    fn server_line(&self) -> String {
        format!(
            "server.{}={}:{}:{}",
            self.myid,
            self.process.ip(),
            self.quorum_port.port(),
            self.election_port.port()
        )
    }

    /// Writes `zoo.cfg`, `log4j.properties` and `data/myid` (again after a wipe).
    fn configure(&self) -> std::io::Result<()> {
        let dir = self.dir();
        let data = dir.join("data");
        std::fs::create_dir_all(&data)?;
        std::fs::write(data.join("myid"), format!("{}\n", self.myid))?;
        std::fs::write(dir.join("log4j.properties"), LOG4J)?;
        let cfg = format!(
            "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
             clientPortAddress={}\nadmin.enableServer=false\n\
             4lw.commands.whitelist=ruok,srvr,mntr,stat\n{}",
            data.display(),
            self.port(),
            self.process.ip(),
            self.ensemble
        );
        std::fs::write(dir.join("zoo.cfg"), cfg)
    }

    fn spawn(&mut self) -> Result<(), ServerError> {
        // A missing jar would only show as a ClassNotFoundException in the log.
        if !Path::new(JAR).exists() {
            return Err(ServerError::Missing {
                binary: "zookeeper.jar",
                source: std::io::Error::new(std::io::ErrorKind::NotFound, JAR),
            });
        }
        self.configure()?;
        let dir = self.dir().to_path_buf();
        let classpath = std::iter::once(JAR)
            .chain(LOG_JARS)
            .collect::<Vec<_>>()
            .join(":");
        let mut cmd = Command::new(BINARY);
        cmd.args([
            "-Xms16m",
            "-Xmx64m",
            "-XX:+UseSerialGC",
            // The C1 compiler alone: starts in half the time, fast enough for tests.
            "-XX:TieredStopAtLevel=1",
        ])
        .arg(format!(
            "-Dlog4j.configuration=file:{}",
            dir.join("log4j.properties").display()
        ))
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(dir.join("zoo.cfg"));
        if self.fake_clock {
            crate::clock::FakeClock::in_dir(&dir).wrap(&mut cmd, "")?;
        }
        self.process.spawn(cmd)
    }

    /// What the server says it is (`srvr`), `None` while it does not serve.
    pub fn mode(&self) -> Option<Mode> {
        four_letter_at(self.process.ip(), self.port(), "srvr").and_then(|a| mode_of(&a))
    }

    fn wait_serving(&mut self) -> Result<(), ServerError> {
        let (ip, port) = (self.process.ip(), self.port());
        self.process.wait_ready(READY_TIMEOUT, || {
            four_letter_at(ip, port, "srvr").is_some_and(|a| mode_of(&a).is_some())
        })
    }
}

impl Server for ZkServer {
    process_field!();

    /// Spawns the server and waits until it serves: at once standalone; in an
    /// ensemble, once a quorum (itself and one more) has a leader.
    fn launch(&mut self) -> Result<(), ServerError> {
        self.spawn()?;
        self.wait_serving()
    }

    /// The snapshots and logs (`myid` is written again at launch).
    fn state(&self) -> Option<PathBuf> {
        Some(self.dir().join("data"))
    }
}

/// A standalone server or an ensemble on 127.0.0.1. Every server is killed when the
/// ensemble is dropped.
#[derive(Debug)]
pub struct ZkEnsemble {
    servers: Vec<ZkServer>,
}

impl ZkEnsemble {
    /// One standalone server.
    pub fn single() -> Result<Self, ServerError> {
        Self::start(1)
    }

    /// Three servers.
    pub fn three() -> Result<Self, ServerError> {
        Self::start(3)
    }

    /// `n` servers (standalone for 1), all serving with one leader.
    pub fn start(n: usize) -> Result<Self, ServerError> {
        Self::start_on(n, None)
    }

    /// `n` servers, each on the host of `lab` named after it (`zk1`, `zk2`, …) when
    /// given, all serving with one leader.
    pub fn start_on(n: usize, lab: Option<&Lab>) -> Result<Self, ServerError> {
        Self::start_with(n, lab, false)
    }

    /// As [`ZkEnsemble::start_on`], every server under libfaketime when `fake_clock`,
    /// so that [`ZkServer::set_clock`] can move its clocks.
    pub fn start_with(n: usize, lab: Option<&Lab>, fake_clock: bool) -> Result<Self, ServerError> {
        let mut servers = (1..=n as u32)
            .map(|i| ZkServer::reserve(i, lab, fake_clock))
            .collect::<Result<Vec<_>, _>>()?;
        let lines = if n > 1 {
            servers
                .iter()
                .map(|s| s.server_line() + "\n")
                .collect::<String>()
        } else {
            String::new()
        };
        // Spawn every server before waiting for any: none serves without a quorum.
        for s in &mut servers {
            s.ensemble = lines.clone();
            s.spawn()?;
        }
        for s in &mut servers {
            s.wait_serving()?;
        }
        Ok(ZkEnsemble { servers })
    }

    /// Every server, `myid` `i + 1` at index `i`, in the order of the connect string: the
    /// indices `server_mut` and `leader` use.
    pub fn servers(&self) -> &[ZkServer] {
        &self.servers
    }

    /// A server, to kill, pause or restart.
    pub fn server_mut(&mut self, i: usize) -> &mut ZkServer {
        &mut self.servers[i]
    }

    /// The connect string: `127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(|s| s.addr())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The index of the server that says it leads (or stands alone) while every other
    /// running server follows, waiting up to `timeout` for that.
    pub fn leader(&mut self, timeout: Duration) -> Option<usize> {
        let start = Instant::now();
        loop {
            let mut leaders = Vec::new();
            let mut settled = true;
            for (i, s) in self.servers.iter_mut().enumerate() {
                if !s.is_running() {
                    continue;
                }
                match s.mode() {
                    Some(Mode::Leader | Mode::Standalone) => leaders.push(i),
                    Some(Mode::Follower) => {}
                    None => settled = false,
                }
            }
            if settled && leaders.len() == 1 {
                return leaders.first().copied();
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9` of the leader; its index. The rest elect a new one.
    pub fn kill_leader(&mut self, timeout: Duration) -> Option<usize> {
        let i = self.leader(timeout)?;
        self.servers[i].kill();
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_mode_lines_parse() {
        let a = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(mode_of(a), Some(Mode::Follower));
        assert_eq!(mode_of("Mode: leader"), Some(Mode::Leader));
        assert_eq!(
            mode_of("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
    }
}
