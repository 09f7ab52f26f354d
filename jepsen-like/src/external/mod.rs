//! Your own lock in any language: a program that speaks locklab's external-client
//! protocol (`jepsen-like/CLIENT-PROTOCOL.md`: JSON Lines over its stdin and stdout, in
//! the spirit of Jepsen's Maelstrom) runs in any scenario that runs for real. locklab
//! starts the program once per simulated client, each in a process group of its own,
//! sends it `init` with the scenario's lock servers, then `acquire`, `release` and
//! `renew`. A client pause is a real `SIGSTOP` of that process group, so a library's
//! own watchdog and session threads stop with it, as in a GC pause; a client crash is
//! `SIGKILL`.
//!
//! ```no_run
//! use locklab_jepsen::external::ExternalClient;
//! use locklab_jepsen::agreement::Answer;
//! use locklab_jepsen::{run, RunOptions};
//!
//! let client = ExternalClient::new(vec!["/usr/bin/python3".into(), "lock_client.py".into()])
//!     .expect("a command");
//! let options = RunOptions {
//!     lock: Some(client.lock("redis-py Lock")),
//!     ..RunOptions::new("redis-lua-pause")
//! };
//! let report = run(&options, &mut |_| {}).expect("ran");
//! // Every property the model says the protocol keeps, the lock kept.
//! assert_eq!(report.agreement.at_least_as_safe, Answer::Yes);
//! ```
//!
//! What a client does wrong — a line that is not JSON, a reply to a request it was not
//! sent, no reply in time, an exit — is recorded in the history ([`problems`]) and
//! listed in the run report; an unanswered request is an `info` operation (it may or may
//! not have taken effect), never a violation.

pub(crate) mod endpoints;
mod lock;
pub mod problems;
mod process;
pub mod protocol;
pub mod wiretap;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use endpoints::ExternalEndpoints;
pub use lock::ExternalLock;
pub use problems::{ClientProblem, ProblemKind};

use crate::custom::CustomLock;

/// How to start a client program, and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalClient {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Its working directory (default: locklab's).
    pub dir: Option<PathBuf>,
    /// How long a request may go unanswered before it counts as unknown (`info`).
    pub reply_timeout: Duration,
    /// How long the program may take to start and answer `init`.
    pub init_timeout: Duration,
}

/// The reply timeout unless told otherwise: far above a lock call's round trip, well
/// below a run's length.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// The init timeout unless told otherwise: room for a JVM to start.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(20);

impl ExternalClient {
    /// The program `command[0]` with arguments `command[1..]`.
    pub fn new(command: Vec<String>) -> Result<Self, String> {
        if command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err("the client command is empty: give the program and its arguments".into());
        }
        Ok(ExternalClient {
            command,
            dir: None,
            reply_timeout: REPLY_TIMEOUT,
            init_timeout: INIT_TIMEOUT,
        })
    }

    /// Whether the program can be started: a path (relative ones from the working
    /// directory) that is an executable file, or a name found on `PATH`. Checked before
    /// any server starts, so a typo is a usage error, not a failed run.
    pub fn check_program(&self) -> Result<(), String> {
        let program = &self.command[0];
        let found = if program.contains('/') {
            let path = match &self.dir {
                Some(d) => d.join(program),
                None => PathBuf::from(program),
            };
            is_executable(&path)
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
        };
        if found {
            Ok(())
        } else {
            Err(format!(
                "the client program {program:?} is not an executable file{}",
                if program.contains('/') {
                    match &self.dir {
                        Some(d) => format!(" (looked in {})", d.display()),
                        None => String::new(),
                    }
                } else {
                    " on PATH".to_string()
                }
            ))
        }
    }

    /// This client as a [`CustomLock`] called `name` in reports. Its traffic to the
    /// lock servers is heard ([`wiretap`]).
    pub fn lock(self, name: &str) -> CustomLock {
        CustomLock::with_context(name, move |client| {
            Ok(Box::new(ExternalLock::start(&self, client)?))
        })
        .heard()
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
