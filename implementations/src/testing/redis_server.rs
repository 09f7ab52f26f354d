//! A `redis-server` child process on a free loopback port with a throw-away data dir,
//! killed (with its whole process group) on drop — also when the test panics — and
//! asked by the kernel to die with its parent thread should the test runner be killed.
//! Every live server is also in [`super::reaper`], so a Ctrl-C handler can kill them all.
//!
//! The same type runs Sentinels (`redis-server FILE --sentinel`) and servers whose clock
//! libfaketime controls ([`ServerConfig::fake_clock`]).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The binary is not installed: a failure, never a reason to skip.
    #[error("redis-server not found on PATH ({0}); install it with ci/setup.sh")]
    Missing(std::io::Error),
    /// Spawning or preparing the data dir failed.
    #[error("starting redis-server: {0}")]
    Io(#[from] std::io::Error),
    /// It started but never answered (last log lines attached).
    #[error("redis-server on port {port} not ready after {waited:?}; log:\n{log}")]
    NotReady {
        /// The port.
        port: u16,
        /// How long we waited.
        waited: Duration,
        /// The tail of its log.
        log: String,
    },
}

const READY_TIMEOUT: Duration = Duration::from_secs(10);
static DIR_SEQ: AtomicU64 = AtomicU64::new(0);

/// How to start a server beyond the defaults (loopback, no persistence, own dir).
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// Extra command-line arguments.
    pub args: Vec<String>,
    /// Run as a Sentinel with this configuration (`port` and `dir` are filled in).
    pub sentinel: Option<String>,
    /// Run under libfaketime, its offset read from `clock` in the data dir at every
    /// clock read, so [`RedisServer::set_clock`] can jump or speed up its clock.
    pub fake_clock: bool,
}

/// A running redis-server.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    config: ServerConfig,
}

/// Plain `faketime` deadlocks redis-server's jemalloc at start; with tcmalloc preloaded
/// first it works (BACKENDS.md).
const FAKETIME_PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4:/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    Ok(l.local_addr()?.port())
}

fn ping(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
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

impl RedisServer {
    /// Starts a standalone server.
    pub fn start() -> Result<Self, ServerError> {
        Self::start_with(&[])
    }

    /// Starts a replica of `master` and waits until its link to the master is up.
    pub fn start_replica_of(master: &RedisServer) -> Result<Self, ServerError> {
        let s = Self::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()])?;
        let start = Instant::now();
        while start.elapsed() < READY_TIMEOUT {
            if s.info("replication").contains("master_link_status:up") {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(ServerError::NotReady {
            port: s.port,
            waited: start.elapsed(),
            log: s.log_tail(),
        })
    }

    /// Starts a server with extra command-line arguments. Retries on another port if the
    /// free port was taken in between.
    pub fn start_with(extra: &[&str]) -> Result<Self, ServerError> {
        Self::start_config(ServerConfig {
            args: extra.iter().map(|a| a.to_string()).collect(),
            ..ServerConfig::default()
        })
    }

    /// Starts a server (or Sentinel) as configured.
    pub fn start_config(config: ServerConfig) -> Result<Self, ServerError> {
        let mut last = None;
        for _ in 0..5 {
            let port = free_port()?;
            let dir = std::env::temp_dir().join(format!(
                "locklab-redis-{}-{}-{}",
                std::process::id(),
                port,
                DIR_SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir)?;
            super::reaper::register_dir(dir.clone());
            let mut s = RedisServer {
                child: None,
                port,
                dir,
                config: config.clone(),
            };
            match s.spawn() {
                Ok(()) => return Ok(s),
                Err(e @ ServerError::Missing(_)) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ServerError::NotReady {
            port: 0,
            waited: Duration::ZERO,
            log: String::new(),
        }))
    }

    fn spawn(&mut self) -> Result<(), ServerError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("redis.log"))?;
        let mut cmd = Command::new("redis-server");
        if let Some(conf) = &self.config.sentinel {
            // Sentinel rewrites its file, so it gets a fresh one in its own dir.
            let path = self.dir.join("sentinel.conf");
            std::fs::write(
                &path,
                format!(
                    "port {}\nbind 127.0.0.1\ndir {}\n{conf}\n",
                    self.port,
                    self.dir.display()
                ),
            )?;
            cmd.arg(&path).arg("--sentinel");
        } else {
            cmd.arg("--port")
                .arg(self.port.to_string())
                .arg("--bind")
                .arg("127.0.0.1")
                .arg("--save")
                .arg("")
                .arg("--appendonly")
                .arg("no")
                .arg("--repl-diskless-sync-delay")
                .arg("0")
                .arg("--dir")
                .arg(&self.dir);
        }
        if self.config.fake_clock {
            let clock = self.dir.join("clock");
            if !clock.exists() {
                std::fs::write(&clock, "+0\n")?;
            }
            cmd.env("LD_PRELOAD", FAKETIME_PRELOAD)
                .env("FAKETIME_TIMESTAMP_FILE", &clock)
                .env("FAKETIME_NO_CACHE", "1");
        }
        // Redis rewrites its command line, so its working dir is what names the run a
        // server belongs to (`/proc/PID/cwd`), for anyone checking that none is left.
        cmd.args(&self.config.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to SIGKILL the
        // child if the spawning thread dies, so a killed test runner leaks no server.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ServerError::Missing(e)
            } else {
                ServerError::Io(e)
            }
        })?;
        super::reaper::register(child.id());
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < READY_TIMEOUT {
            if ping(self.port) {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let log = self.log_tail();
        self.kill();
        Err(ServerError::NotReady {
            port: self.port,
            waited: start.elapsed(),
            log,
        })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The data dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn signal(&self, sig: libc::c_int) {
        if let Some(pid) = self.pid().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: plain kill(2) on our own child's process group.
            unsafe {
                libc::kill(-pid, sig);
            }
        }
    }

    /// `kill -9` of the process group, then reaps it. Idempotent.
    pub fn kill(&mut self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGKILL);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            super::reaper::forget(c.id());
        }
    }

    /// Graceful stop: SIGTERM, then `kill -9` if it has not exited within 2 s.
    pub fn stop(&mut self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            if !self.is_running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// Whether the process is still alive (not killed, not exited).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// SIGSTOP: the server stops answering but keeps its connections.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT after [`RedisServer::pause`].
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Starts the server again on the same port, with an empty data set (no persistence:
    /// the restart that breaks Redlock).
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.kill();
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.spawn()
    }

    /// Kills the server (`kill -9`) but first snapshots its data (`SAVE`), then starts it
    /// again on the same port: a restart that keeps the data, as with persistence.
    pub fn restart_keeping_data(&mut self) -> Result<(), ServerError> {
        self.cli(&["SAVE"]);
        self.kill();
        self.spawn()
    }

    /// Starts a killed server again on the same port and data dir, as it is.
    pub fn start_again(&mut self) -> Result<(), ServerError> {
        self.kill();
        self.spawn()
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
        // Write-then-rename: the server may read the file at any instant.
        let tmp = self.dir.join("clock.tmp");
        std::fs::write(&tmp, format!("{spec}\n"))?;
        std::fs::rename(tmp, self.dir.join("clock"))
    }

    /// Runs a command through `redis-cli` and returns its output (for assertions that
    /// must not go through the code under test).
    pub fn cli(&self, args: &[&str]) -> String {
        Command::new("redis-cli")
            .arg("-p")
            .arg(self.port.to_string())
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// `INFO section`.
    pub fn info(&self, section: &str) -> String {
        self.cli(&["INFO", section])
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
        super::reaper::forget_dir(&self.dir);
    }
}
