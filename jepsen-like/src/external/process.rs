//! One external client's process: started in a process group of its own, asked by the
//! kernel to die with the thread that started it (`PR_SET_PDEATHSIG`), listed in the
//! servers' reaper for a Ctrl-C handler, and killed with its whole group when dropped.
//! Three threads of its own move its pipes, so a stopped or hung client never blocks
//! the harness's runtime: one writes requests to its stdin, one reads its stdout and
//! matches each reply to the request it answers, one copies its stderr to a log file.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use locklab_implementations::LockError;

use super::problems::{ProblemKind, Recorder};
use super::protocol::{excerpt, read_line, Line, Reply, Request};
use super::ExternalClient;
use crate::log::Log;

mod pipes;
use pipes::{copy_stderr, lock, read_replies, Shared, State};
pub(crate) use pipes::{Failure, Waiter};

/// A running external client.
pub(crate) struct ClientProcess {
    shared: Arc<Shared>,
    writer: Mutex<Option<mpsc::Sender<String>>>,
}

impl ClientProcess {
    /// Starts `spec`'s command as client `name`; its stderr and a transcript of the
    /// protocol go to `dir/clients/`.
    pub(crate) fn spawn(
        spec: &ExternalClient,
        name: &str,
        log: Arc<Log>,
        dir: &Path,
    ) -> Result<Self, String> {
        let (program, args) = spec
            .command
            .split_first()
            .ok_or_else(|| "the client command is empty".to_string())?;
        let logs = dir.join("clients");
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        let stderr_file = File::create(logs.join(format!("{name}.stderr")))
            .map_err(|e| format!("{}: {e}", logs.display()))?;
        let transcript = File::create(logs.join(format!("{name}.protocol")))
            .map_err(|e| format!("{}: {e}", logs.display()))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("LOCKLAB_CLIENT", name)
            .env("LOCKLAB_HARNESS_PID", std::process::id().to_string())
            // The run's own directory: tells this run's clients from those of another
            // run of the same harness process side by side (a test suite's).
            .env("LOCKLAB_RUN_DIR", dir)
            .process_group(0);
        if let Some(d) = &spec.dir {
            cmd.current_dir(d);
        }
        // SAFETY: prctl is async-signal-safe; it asks the kernel to SIGKILL the client
        // if the thread that started it dies, so a killed harness leaks no client.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {program:?}: {e}"))?;
        locklab_servers::reaper::register(child.id());
        let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let shared = Arc::new(Shared {
            name: name.to_string(),
            pid,
            problems: Recorder::new(name, log),
            state: Mutex::new(State::default()),
            killing: AtomicBool::new(false),
            child: Mutex::new(Some(child)),
            stderr_tail: Mutex::new(VecDeque::new()),
            transcript: Mutex::new(Some(transcript)),
            started: Instant::now(),
        });
        // From here on, dropping `process` kills the child.
        let process = ClientProcess {
            shared: Arc::clone(&shared),
            writer: Mutex::new(None),
        };
        let (Some(mut stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            return Err("the client's pipes were not set up".into());
        };
        let (tx, rx) = mpsc::channel::<String>();
        *lock(&process.writer) = Some(tx);
        let thread =
            |what: &str| std::thread::Builder::new().name(format!("locklab-{name}-{what}"));
        thread("in")
            .spawn(move || {
                for line in rx {
                    if stdin
                        .write_all(line.as_bytes())
                        .and_then(|()| stdin.flush())
                        .is_err()
                    {
                        // Gone: the stdout reader reports it.
                        return;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        let (stderr_done, stderr_wait) = mpsc::channel::<()>();
        let err_shared = Arc::clone(&shared);
        thread("err")
            .spawn(move || copy_stderr(stderr, stderr_file, &err_shared, stderr_done))
            .map_err(|e| e.to_string())?;
        thread("out")
            .spawn(move || read_replies(stdout, &shared, &stderr_wait))
            .map_err(|e| e.to_string())?;
        Ok(process)
    }

    /// The client's name (`c0`).
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// The id of the next request.
    pub(crate) fn next_id(&self) -> u64 {
        let mut state = lock(&self.shared.state);
        let id = state.next_id;
        state.next_id += 1;
        id
    }

    /// Sends `request`; `waiter` hears its reply.
    pub(crate) fn send(&self, request: &Request<'_>, waiter: Waiter) -> Result<(), Failure> {
        let line = serde_json::to_string(request)
            .map_err(|e| Failure::Malformed(format!("writing the request: {e}")))?;
        {
            let mut state = lock(&self.shared.state);
            if let Some(why) = &state.gone {
                return Err(Failure::Gone(why.clone()));
            }
            state.pending.insert(request.id(), (waiter, request.kind()));
        }
        self.shared.note(">", &line);
        let sent = lock(&self.writer)
            .as_ref()
            .is_some_and(|w| w.send(line + "\n").is_ok());
        if !sent {
            lock(&self.shared.state).pending.remove(&request.id());
            return Err(Failure::Gone("its stdin is closed".into()));
        }
        Ok(())
    }

    /// Stops waiting for request `id`: a reply to it from now on is late. `timed_out`:
    /// the reply timeout ran out (a problem of the client's); `None`: the harness
    /// dropped the attempt.
    pub(crate) fn give_up(&self, id: u64, timed_out: Option<Duration>) {
        let kind = {
            let mut state = lock(&self.shared.state);
            let Some((_, kind)) = state.pending.remove(&id) else {
                return;
            };
            state.given_up.insert(id);
            kind
        };
        if let Some(t) = timed_out {
            self.shared.problems.record(
                ProblemKind::Timeout,
                &format!("did not answer its {kind} request {id} within {t:?}: recorded as unknown (info)"),
            );
        }
    }

    /// Sends a request and waits up to `timeout` for its reply, as a lock call: an
    /// unanswered request is [`LockError::NoAnswer`] (an `info` operation), a gone
    /// process [`LockError::ClientGone`].
    pub(crate) async fn request(
        &self,
        request: &Request<'_>,
        timeout: Duration,
    ) -> Result<Reply, LockError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = request.id();
        self.send(request, Waiter::Async(tx))
            .map_err(|f| self.error(f, request))?;
        // Dropped before the reply (the attempt was cancelled): a reply is late.
        let mut waiting = GiveUpOnDrop {
            process: self,
            id: Some(id),
        };
        let answer = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(Failure::Gone("its reply channel closed".into())),
            Err(_) => {
                waiting.id = None;
                self.give_up(id, Some(timeout));
                return Err(LockError::NoAnswer {
                    node: format!("client {}", self.name()),
                    timeout,
                });
            }
        };
        waiting.id = None;
        answer.map_err(|f| self.error(f, request))
    }

    fn error(&self, failure: Failure, request: &Request<'_>) -> LockError {
        match failure {
            Failure::Gone(why) => LockError::ClientGone(why),
            Failure::Malformed(why) => LockError::UnexpectedReply {
                command: format!("{} request {}", request.kind(), request.id()),
                reply: why,
            },
        }
    }

    /// SIGSTOP of the whole process group.
    pub(crate) fn stop(&self) {
        if lock(&self.shared.child).is_some() {
            self.shared.signal(libc::SIGSTOP);
        }
    }

    /// SIGCONT of the whole process group.
    pub(crate) fn resume(&self) {
        if lock(&self.shared.child).is_some() {
            self.shared.signal(libc::SIGCONT);
        }
    }

    /// The last lines of its stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail: Vec<String> = lock(&self.shared.stderr_tail).iter().cloned().collect();
        tail.join("\n")
    }
}

impl Drop for ClientProcess {
    /// `kill -9` of the whole group (after SIGCONT: a stopped process cannot die
    /// otherwise), then reaps it: the end of a run and a client crash look the same to
    /// the client.
    fn drop(&mut self) {
        self.shared.killing.store(true, Ordering::SeqCst);
        lock(&self.writer).take();
        let mut child = lock(&self.shared.child);
        if let Some(mut c) = child.take() {
            self.shared.signal(libc::SIGCONT);
            self.shared.signal(libc::SIGKILL);
            let _ = c.wait();
            locklab_servers::reaper::forget(c.id());
        }
    }
}

struct GiveUpOnDrop<'a> {
    process: &'a ClientProcess,
    id: Option<u64>,
}

impl Drop for GiveUpOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.process.give_up(id, None);
        }
    }
}
