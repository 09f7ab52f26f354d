//! Real servers as child processes, for the tests of every crate and for the harness
//! (`locklab run`). No mocks: what the tests and the harness fault is a real process.
//!
//! - [`Server`]: what every family's server can be made to do — its own loopback port
//!   and temp data dir, `kill -9`, SIGSTOP/SIGCONT, graceful stop, restart with or
//!   without its data, its log.
//! - [`process`]: the child process under every server, with the guarantees that no
//!   server outlives the program that started it: killed on drop (also on panic), asked
//!   by the kernel to die with the thread that started it (`PR_SET_PDEATHSIG`, so a
//!   `kill -9` of the harness leaks nothing), and listed in [`reaper`] for a Ctrl-C
//!   handler.
//! - [`scratch`]: temp dirs removed on drop, and by the next process when their owner
//!   was killed before it could.
//! - [`port`]: ports below the kernel's ephemeral range, each held by a lock file while
//!   its server may use it, so nothing takes one between its pick and the server's bind.
//! - [`net`]: hosts of their own — a network namespace per node on a bridge the lab
//!   owns, partitions between any of them (nftables), removed on drop and, after a
//!   `kill -9`, by the next start's [`net::reap`].
//! - [`redis`]: `redis-server` and Sentinel.
//! - [`mariadb`] and [`postgres`]: the SQL servers, each with its own cluster.
//! - [`etcd`]: one etcd member or a cluster of three.
//! - [`zk`]: one standalone ZooKeeper server or an ensemble of three.
//!
//! A family adds one file under its own folder (`mariadb/`, `postgres/`, `etcd/`,
//! `zookeeper/`): a type that holds a [`process::ServerProcess`], says how to launch and
//! probe itself, and implements [`Server`].
#![warn(missing_docs)]

/// The two accessors [`Server`] asks for, of a server whose `process` field is its
/// [`ServerProcess`]: written inside the `impl Server` block.
macro_rules! process_field {
    () => {
        fn process(&self) -> &$crate::process::ServerProcess {
            &self.process
        }

        fn process_mut(&mut self) -> &mut $crate::process::ServerProcess {
            &mut self.process
        }
    };
}

pub mod clock;
pub mod etcd;
pub mod mariadb;
pub mod net;
pub mod port;
pub mod postgres;
pub mod process;
pub mod reaper;
pub mod redis;
pub mod scratch;
pub mod zk;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use etcd::{EtcdCluster, EtcdMember};
pub use mariadb::MariaDbServer;
pub use postgres::PostgresServer;
pub use process::ServerProcess;
pub use redis::{RedisServer, Sentinel, ServerConfig};
pub use zk::{ZkEnsemble, ZkServer};

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The binary is not installed: a failure, never a reason to skip.
    #[error("{binary} not found on PATH ({source}); install it with ci/setup.sh")]
    Missing {
        /// The program.
        binary: &'static str,
        /// What spawning said.
        source: std::io::Error,
    },
    /// Spawning or preparing the data dir failed.
    #[error("starting a server: {0}")]
    Io(#[from] std::io::Error),
    /// It started but never answered (last log lines attached).
    #[error("{binary} on port {port} not ready after {waited:?}; log:\n{log}")]
    NotReady {
        /// The program.
        binary: &'static str,
        /// The loopback port it was told to listen on, where nothing answered.
        port: u16,
        /// How long we waited.
        waited: Duration,
        /// The tail of its log.
        log: String,
    },
}

/// What a restart does with the server's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    /// Keep it, as a server with persistence would (Redis: `SAVE` before the kill).
    Keep,
    /// Start empty: the restart without persistence that breaks Redlock.
    Wipe,
}

/// A server process of any family, on its own 127.0.0.1 port (or a lab host's address and
/// its family's well-known port) with its own data dir.
///
/// A family implements the three required methods; the process control is the same for
/// every family and comes with the trait.
pub trait Server: Send {
    /// The child process.
    fn process(&self) -> &ServerProcess;

    /// The child process, to signal or replace it.
    fn process_mut(&mut self) -> &mut ServerProcess;

    /// Spawns the server on its port and data dir and waits until it answers.
    fn launch(&mut self) -> Result<(), ServerError>;

    /// Makes the data survive a `kill -9` (Redis: `SAVE`). Durable databases need
    /// nothing: the default does nothing.
    fn persist(&mut self) {}

    /// What a restart without its data loses: a file or a folder in the data dir
    /// (`None`: nothing of it survives a restart anyway).
    fn state(&self) -> Option<PathBuf>;

    /// Removes [`state`](Server::state), so the next launch starts empty.
    fn wipe(&mut self) -> std::io::Result<()> {
        let Some(path) = self.state() else {
            return Ok(());
        };
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match gone {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The loopback port clients connect to; restarts keep it, so addresses stay valid.
    fn port(&self) -> u16 {
        self.process().port()
    }

    /// `ip:port`: `127.0.0.1`, or its lab host's address.
    fn addr(&self) -> String {
        format!("{}:{}", self.process().ip(), self.port())
    }

    /// The data dir.
    fn dir(&self) -> &Path {
        self.process().dir()
    }

    /// The process id while it runs.
    fn pid(&self) -> Option<u32> {
        self.process().pid()
    }

    /// `kill -9` of the process group, then reaps it. Idempotent.
    fn kill(&mut self) {
        self.process_mut().kill();
    }

    /// Graceful stop (SIGTERM), then `kill -9` if it has not exited within 2 s.
    fn stop(&mut self) {
        self.process_mut().stop();
    }

    /// SIGSTOP: the server stops answering but keeps its connections. Returns once
    /// the server is stopped, so a request sent after it is not answered.
    fn pause(&self) {
        self.process().pause();
    }

    /// SIGCONT after [`Server::pause`].
    fn resume(&self) {
        self.process().signal(libc::SIGCONT);
    }

    /// Whether the process is still alive (not killed, not exited).
    fn is_running(&mut self) -> bool {
        self.process_mut().is_running()
    }

    /// Kills the server and starts it again on the same port, with or without its data.
    fn restart_with(&mut self, data: Data) -> Result<(), ServerError> {
        match data {
            Data::Keep => self.persist(),
            Data::Wipe => {}
        }
        self.kill();
        if data == Data::Wipe {
            self.wipe()?;
        }
        self.launch()
    }

    /// Starts the server again on the same port, empty (no persistence).
    fn restart(&mut self) -> Result<(), ServerError> {
        self.restart_with(Data::Wipe)
    }

    /// Starts the server again on the same port with the data it had.
    fn restart_keeping_data(&mut self) -> Result<(), ServerError> {
        self.restart_with(Data::Keep)
    }

    /// Starts a killed or stopped server again on the same port and data dir, as it is.
    fn start_again(&mut self) -> Result<(), ServerError> {
        self.kill();
        self.launch()
    }

    /// The server's log so far.
    fn log(&self) -> String {
        self.process().log()
    }
}
