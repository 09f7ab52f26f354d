//! PostgreSQL on a free loopback port — or on a lab host's address — with its own cluster (`initdb` at the first
//! launch) and socket dir, as BACKENDS.md describes. The server refuses to run as root,
//! so when this program is root the cluster belongs to the `postgres` user and the
//! postmaster is spawned under its uid (the child's pid is still the postmaster's, so
//! the process control of [`Server`] applies unchanged; on a lab host `setpriv` drops
//! to that uid inside the namespace, since entering one needs root). Clients connect as `postgres`
//! with trust authentication; the operator's controls go through `psql`.

use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::net::Host;
use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program.
pub const BINARY: &str = "postgres";

/// Makes the cluster.
pub const INITDB: &str = "initdb";

/// The client the controls use.
pub const CLIENT: &str = "psql";

/// Its port on a lab host.
pub const PORT: u16 = 5432;

/// The family's data dirs are named `locklab-postgres-…`.
pub const FAMILY: &str = "postgres";

/// The database and user the clients use.
pub const USER: &str = "postgres";

/// Where Debian installs the server when it is not on `PATH`.
const DEBIAN_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running PostgreSQL server.
#[derive(Debug)]
pub struct PostgresServer {
    process: ServerProcess,
    /// The uid and gid the server runs as (`None`: ours, when we are not root).
    owner: Option<(u32, u32)>,
}

/// `name` on `PATH`, else in Debian's versioned directory.
fn program(name: &str) -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false);
    if on_path {
        PathBuf::from(name)
    } else {
        Path::new(DEBIAN_BIN).join(name)
    }
}

/// The `postgres` account's uid and gid, read from `/etc/passwd`.
fn postgres_account() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&"postgres") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn missing_or_io(binary: &'static str, source: std::io::Error) -> ServerError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ServerError::Missing { binary, source }
    } else {
        ServerError::Io(source)
    }
}

impl PostgresServer {
    /// Starts a server with a fresh cluster.
    pub fn start() -> Result<Self, ServerError> {
        Self::start_on(None)
    }

    /// As [`PostgresServer::start`], in `host`'s namespace on its address when given
    /// (a node of a [`crate::net::Lab`]).
    pub fn start_on(host: Option<&Host>) -> Result<Self, ServerError> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let owner = if root {
            Some(postgres_account().ok_or_else(|| {
                ServerError::Io(std::io::Error::other(
                    "running as root, and there is no postgres user to run the server as (install postgresql with ci/setup.sh)",
                ))
            })?)
        } else {
            None
        };
        ServerProcess::start_on(BINARY, FAMILY, host, PORT, |process| PostgresServer {
            process,
            owner,
        })
    }

    fn data(&self) -> PathBuf {
        self.dir().join("data")
    }

    /// `postgres://postgres@IP:PORT/postgres` (`127.0.0.1` or its lab host's address),
    /// what clients connect to.
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}@{}:{}/{USER}",
            self.process.ip(),
            self.port()
        )
    }

    /// Runs `sql` through `psql` (unaligned, no headers) and returns its output, or the
    /// client's error.
    pub fn sql(&self, sql: &str) -> Result<String, ServerError> {
        let out = Command::new(CLIENT)
            .args(["-h", &self.process.ip().to_string()])
            .args(["-p", &self.port().to_string()])
            .args([
                "-U",
                USER,
                "-d",
                USER,
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(["-c", sql])
            .output()
            .map_err(|e| missing_or_io(CLIENT, e))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(ServerError::Io(std::io::Error::other(format!(
                "psql failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))))
        }
    }

    /// `SELECT pg_terminate_backend(pid)`: what an operator does to a session.
    pub fn terminate_backend(&self, pid: u32) -> Result<bool, ServerError> {
        Ok(self.sql(&format!("SELECT pg_terminate_backend({pid})"))? == "t")
    }

    fn as_owner(&self, cmd: &mut Command) {
        if let Some((uid, gid)) = self.owner {
            cmd.uid(uid).gid(gid);
        }
    }

    fn initdb(&self) -> Result<(), ServerError> {
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::chown(self.dir(), Some(uid), Some(gid))?;
        }
        let mut cmd = Command::new(program(INITDB));
        cmd.arg("-D")
            .arg(self.data())
            .args(["-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
            // A throw-away cluster: no fsync of its files.
            .arg("--no-sync")
            .current_dir(self.dir());
        self.as_owner(&mut cmd);
        let out = cmd.output().map_err(|e| missing_or_io(INITDB, e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ServerError::Io(std::io::Error::other(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))))
        }
    }

    fn ready(ip: Ipv4Addr, port: u16) -> bool {
        Command::new("pg_isready")
            .args(["-q", "-h", &ip.to_string(), "-p", &port.to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Server for PostgresServer {
    process_field!();

    fn launch(&mut self) -> Result<(), ServerError> {
        if !self.data().exists() {
            self.initdb()?;
            if self.process.host().is_some() {
                // initdb trusts loopback only; on a lab host the clients come from the
                // lab's gateway, and nothing beyond the lab reaches the server.
                use std::io::Write;
                let mut hba = std::fs::OpenOptions::new()
                    .append(true)
                    .open(self.data().join("pg_hba.conf"))?;
                writeln!(hba, "host all all samenet trust")?;
            }
        }
        let mut cmd = match (self.owner, self.process.host()) {
            // Entering the namespace needs root, so the drop to the owner's uid happens
            // inside it; the parent-death signal is set again after the drop, which
            // clears it.
            (Some((uid, gid)), Some(_)) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .args(["--clear-groups", "--pdeathsig", "KILL", "--"])
                    .arg(program(BINARY));
                c
            }
            _ => {
                let mut c = Command::new(program(BINARY));
                self.as_owner(&mut c);
                c
            }
        };
        cmd.arg("-D")
            .arg(self.data())
            .arg("-p")
            .arg(self.port().to_string())
            .arg("-k")
            .arg(self.dir())
            .args(["-c", &format!("listen_addresses={}", self.process.ip())])
            // Dynamic shared memory as files in the data dir, so a kill -9 leaves
            // nothing in /dev/shm once the dir is removed.
            .args(["-c", "dynamic_shared_memory_type=mmap"])
            .args(["-c", "fsync=off"])
            // The inventory benchmark's sweep opens a thousand connections (100 by default).
            .args(["-c", "max_connections=1100"]);
        self.process.spawn(cmd)?;
        let (ip, port) = (self.process.ip(), self.port());
        let mut last = Instant::now() - Duration::from_secs(1);
        self.process.wait_ready(READY_TIMEOUT, || {
            // pg_isready is a process: ask every 50 ms, not at every 10 ms poll.
            if last.elapsed() < Duration::from_millis(50) {
                return false;
            }
            last = Instant::now();
            Self::ready(ip, port)
        })
    }

    /// SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client to leave);
    /// `kill -9` if it has not exited within 2 s.
    fn stop(&mut self) {
        self.process.signal(libc::SIGCONT);
        self.process.signal(libc::SIGINT);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) && self.process.is_running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.process.kill();
    }

    fn state(&self) -> Option<PathBuf> {
        Some(self.data())
    }
}

impl Drop for PostgresServer {
    /// A fast shutdown first: a postmaster killed with -9 leaves its small System V
    /// shared memory segment behind.
    fn drop(&mut self) {
        if self.process.is_running() {
            self.stop();
        }
    }
}
