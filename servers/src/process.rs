//! The child process under every [`crate::Server`]: one loopback port held for it
//! ([`crate::port`]) — or, on a lab host, its family's well-known port — one temp data dir, one process group. Killed (with its whole group) on drop — also when a
//! test panics — and asked by the kernel to die with the thread that spawned it, so a
//! killed harness or test runner leaks no server. Every live one is in
//! [`crate::reaper`], so a Ctrl-C handler can kill them all.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::net::Host;
use crate::port::{self, PortLease};
use crate::scratch::ScratchDir;
use crate::{reaper, Server, ServerError};

/// How long a server may take to answer after a spawn.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

static DIR_SEQ: AtomicU64 = AtomicU64::new(0);

/// A server's process, port and data dir.
#[derive(Debug)]
pub struct ServerProcess {
    binary: &'static str,
    child: Option<Child>,
    port: PortLease,
    dir: ScratchDir,
    /// The lab host it runs on (its namespace and address); `None`: loopback.
    host: Option<Host>,
}

impl ServerProcess {
    /// A port of its own and a fresh data dir `locklab-<family>-<our pid>-<port>-<n>` (the
    /// name tells which program a left-over server belongs to); nothing runs yet.
    pub fn reserve(binary: &'static str, family: &str) -> Result<Self, ServerError> {
        Self::reserve_on(binary, family, None, 0)
    }

    /// As [`ServerProcess::reserve`], to run in `host`'s namespace on its address and
    /// port `well_known` when given (a node of a [`crate::net::Lab`]); `None`: loopback
    /// and a leased port.
    pub fn reserve_on(
        binary: &'static str,
        family: &str,
        host: Option<Host>,
        well_known: u16,
    ) -> Result<Self, ServerError> {
        let port = port::for_host(host.is_some(), well_known)?;
        let dir = ScratchDir::create(&format!(
            "locklab-{family}-{}-{}-{}",
            std::process::id(),
            port.port(),
            DIR_SEQ.fetch_add(1, Ordering::Relaxed)
        ))?;
        Ok(ServerProcess {
            binary,
            child: None,
            port,
            dir,
            host,
        })
    }

    /// Builds a server around a reserved process and launches it; a server that does
    /// not come up is tried again from scratch (up to five tries).
    pub fn start<S: Server>(
        binary: &'static str,
        family: &str,
        make: impl FnMut(ServerProcess) -> S,
    ) -> Result<S, ServerError> {
        Self::start_on(binary, family, None, 0, make)
    }

    /// As [`ServerProcess::start`], in `host`'s namespace on its address and on port
    /// `well_known` when given (a node of a [`crate::net::Lab`]).
    pub fn start_on<S: Server>(
        binary: &'static str,
        family: &str,
        host: Option<&Host>,
        well_known: u16,
        mut make: impl FnMut(ServerProcess) -> S,
    ) -> Result<S, ServerError> {
        let mut last = None;
        for _ in 0..5 {
            let process = ServerProcess::reserve_on(binary, family, host.cloned(), well_known)?;
            let mut server = make(process);
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(e @ ServerError::Missing { .. }) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ServerError::NotReady {
            binary,
            port: 0,
            waited: Duration::ZERO,
            log: String::new(),
        }))
    }

    /// The program's name.
    pub fn binary(&self) -> &'static str {
        self.binary
    }

    /// The port its lease holds, which every launch and restart of the server binds.
    pub fn port(&self) -> u16 {
        self.port.port()
    }

    /// The data dir.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The address it listens on: its lab host's, or loopback.
    pub fn ip(&self) -> std::net::Ipv4Addr {
        self.host
            .as_ref()
            .map_or(std::net::Ipv4Addr::LOCALHOST, |h| h.addr)
    }

    /// The lab host it runs on, if any.
    pub fn host(&self) -> Option<&Host> {
        self.host.as_ref()
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Spawns `cmd` in the data dir, its output appended to the log, as the leader of
    /// its own process group, to die with the spawning thread.
    pub fn spawn(&mut self, cmd: Command) -> Result<(), ServerError> {
        let mut cmd = match &self.host {
            Some(h) => in_netns(&h.netns, &cmd),
            None => cmd,
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        // Some servers rewrite their command line, so the working dir is what names
        // the program a server belongs to (`/proc/PID/cwd`), for anyone checking that
        // none is left.
        cmd.current_dir(self.dir.path())
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
        let binary = self.binary;
        let child = cmd.spawn().map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                ServerError::Missing { binary, source }
            } else {
                ServerError::Io(source)
            }
        })?;
        reaper::register(child.id());
        self.child = Some(child);
        Ok(())
    }

    /// Waits until `ready` says yes; kills the process and reports its log if it does
    /// not within `timeout` or exits first.
    pub fn wait_ready(
        &mut self,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), ServerError> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if ready() {
                return Ok(());
            }
            if !self.is_running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let log = self.log_tail();
        self.kill();
        Err(ServerError::NotReady {
            binary: self.binary,
            port: self.port.port(),
            waited: start.elapsed(),
            log,
        })
    }

    /// Sends `sig` to the process group.
    pub fn signal(&self, sig: libc::c_int) {
        if let Some(pid) = self.pid().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: plain kill(2) on our own child's process group.
            unsafe {
                libc::kill(-pid, sig);
            }
        }
    }

    /// SIGSTOP to the process group, returning once every thread of the process is
    /// stopped (or after 2 s, or when the process is gone). kill(2) only queues the
    /// stop: a thread running on another core goes on serving until it is interrupted,
    /// so a request sent right after a bare SIGSTOP may still be answered, and a
    /// "paused" server would be seen answering.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
        let Some(pid) = self.pid() else { return };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !all_threads_stopped(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// `kill -9` of the process group (after SIGCONT: a paused process cannot die
    /// otherwise), then reaps it. Idempotent.
    pub fn kill(&mut self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGKILL);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            reaper::forget(c.id());
        }
    }

    /// SIGTERM, then `kill -9` if it has not exited within 2 s.
    pub fn stop(&mut self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) && self.is_running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// Whether the process is alive (not killed, not exited).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last 20 lines of the log.
    pub fn log_tail(&self) -> String {
        let text = self.log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// `cmd` run inside `netns` (`ip netns exec` execs it: the child is the program).
fn in_netns(netns: &str, cmd: &Command) -> Command {
    let mut wrapped = Command::new("ip");
    wrapped
        .args(["netns", "exec", netns])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // The data dir goes after this, with the field: the server is dead by then.
        self.kill();
    }
}

/// Whether every thread of process `pid` is stopped (state `T` in
/// `/proc/PID/task/TID/stat`); also true when the process is gone, since nothing of it
/// can answer then.
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.flatten().all(|task| {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            // A thread that exited between the listing and the read.
            return true;
        };
        // The state follows the command name, which is in parentheses and may itself
        // hold spaces or parentheses: read after the last ')'.
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].trim_start().chars().next())
            .is_some_and(|state| matches!(state, 'T' | 't' | 'Z' | 'X'))
    })
}

#[cfg(test)]
mod tests {
    use super::all_threads_stopped;

    /// The stop is read off /proc: a running child is not stopped, a SIGSTOPped one
    /// is once the kernel has stopped it, a continued one is not again.
    #[test]
    fn a_stopped_child_reads_as_stopped_and_a_continued_one_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawns sleep");
        let pid = child.id();
        let raw = libc::pid_t::try_from(pid).expect("a pid");
        let until = |want: bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while all_threads_stopped(pid) != want && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            all_threads_stopped(pid) == want
        };
        assert!(until(false), "a running child reads as stopped");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(raw, libc::SIGSTOP) };
        assert!(until(true), "a SIGSTOPped child never read as stopped");
        // SAFETY: as above.
        unsafe { libc::kill(raw, libc::SIGCONT) };
        assert!(until(false), "a continued child still reads as stopped");
        let _ = child.kill();
        let _ = child.wait();
    }
}
