//! What the harness and a client's pipe threads share (the requests waiting for a
//! reply, the stderr tail, why the process is gone), and the threads that read its
//! stdout and stderr.

use super::*;

/// The longest line a client may write; a longer one is a problem, and skipped.
pub(super) const MAX_LINE: usize = 1 << 20;

/// How long a client that closed its stdout has to exit before it is killed.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Lines of a client's stderr kept for the report when it dies.
pub(super) const STDERR_TAIL: usize = 12;

/// Why a request got no usable reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The process is gone, and why.
    Gone(String),
    /// The reply to it could not be read.
    Malformed(String),
}

pub(super) type Answer = Result<Reply, Failure>;

/// Who waits for a reply: a task of the workload, or the thread that starts the client.
pub(crate) enum Waiter {
    Async(tokio::sync::oneshot::Sender<Answer>),
    Blocking(mpsc::Sender<Answer>),
}

impl Waiter {
    fn answer(self, a: Answer) {
        // The waiter may have stopped waiting: that is what `given_up` is for.
        match self {
            Waiter::Async(s) => {
                let _ = s.send(a);
            }
            Waiter::Blocking(s) => {
                let _ = s.send(a);
            }
        }
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) next_id: u64,
    /// Requests sent and not answered, with their type.
    pub(super) pending: HashMap<u64, (Waiter, &'static str)>,
    /// Requests locklab stopped waiting for (timed out, or the attempt was dropped).
    pub(super) given_up: HashSet<u64>,
    /// Why the process can answer nothing any more.
    pub(super) gone: Option<String>,
}

pub(super) struct Shared {
    pub(super) name: String,
    pub(super) pid: libc::pid_t,
    pub(super) problems: Recorder,
    pub(super) state: Mutex<State>,
    /// Set before locklab kills the process, so its end is no problem of the client's.
    pub(super) killing: AtomicBool,
    pub(super) child: Mutex<Option<Child>>,
    pub(super) stderr_tail: Mutex<VecDeque<String>>,
    pub(super) transcript: Mutex<Option<File>>,
    pub(super) started: Instant,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(super) fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on the process group this harness created; the group's
        // leader is not reaped before the last signal (see `ended` and `Drop`), so
        // its id cannot have been reused.
        unsafe {
            libc::kill(-self.pid, sig);
        }
    }

    pub(super) fn note(&self, arrow: &str, line: &str) {
        if let Some(f) = lock(&self.transcript).as_mut() {
            let ms = self.started.elapsed().as_secs_f64() * 1000.0;
            let _ = writeln!(f, "{ms:10.1} {arrow} {line}");
        }
    }

    pub(super) fn handle(&self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end();
        self.note("<", text);
        let shown = excerpt(text, 200);
        match read_line(bytes) {
            Line::Blank => {}
            Line::NotJson(why) => self.problems.record(
                ProblemKind::NotJson,
                &format!("wrote a line that is not JSON ({why}), ignored: {shown}"),
            ),
            Line::Malformed { id, why } => {
                let waiter = id.and_then(|id| lock(&self.state).pending.remove(&id));
                let what = match (&waiter, id) {
                    (Some((_, kind)), Some(id)) => {
                        format!("; its {kind} request {id} is recorded as unknown (info)")
                    }
                    _ => "; ignored".to_string(),
                };
                self.problems.record(
                    ProblemKind::Malformed,
                    &format!("wrote a reply locklab cannot read ({why}): {shown}{what}"),
                );
                if let Some((w, _)) = waiter {
                    w.answer(Err(Failure::Malformed(why)));
                }
            }
            Line::Reply(reply) => {
                let id = reply.id;
                let mut state = lock(&self.state);
                if let Some((w, _)) = state.pending.remove(&id) {
                    drop(state);
                    w.answer(Ok(reply));
                    return;
                }
                let (kind, detail) = if state.given_up.remove(&id) {
                    (
                        ProblemKind::Late,
                        format!("answered request {id} after locklab had stopped waiting for it (recorded as unknown); the late reply is left out of the history: {shown}"),
                    )
                } else if id < state.next_id {
                    (
                        ProblemKind::Duplicate,
                        format!("answered request {id} a second time, ignored: {shown}"),
                    )
                } else {
                    (
                        ProblemKind::Unsolicited,
                        format!(
                            "answered request {id}, which locklab never sent, ignored: {shown}"
                        ),
                    )
                };
                drop(state);
                self.problems.record(kind, &detail);
            }
        }
    }

    /// The client's stdout closed: it exited, or will be made to.
    pub(super) fn ended(&self, stderr_done: &mpsc::Receiver<()>) {
        let killing = self.killing.load(Ordering::SeqCst);
        let why = if killing {
            "killed by locklab".to_string()
        } else {
            let status = self.reap_after_exit();
            // What it said last, once its stderr is read to the end.
            let _ = stderr_done.recv_timeout(Duration::from_millis(500));
            let tail: Vec<String> = lock(&self.stderr_tail).iter().cloned().collect();
            let said = if tail.is_empty() {
                "nothing on its stderr".to_string()
            } else {
                format!("its stderr ended: {}", excerpt(&tail.join(" | "), 600))
            };
            format!("its process {status}; {said}")
        };
        let waiters: Vec<_> = {
            let mut state = lock(&self.state);
            state.gone = Some(why.clone());
            state.pending.drain().map(|(_, (w, _))| w).collect()
        };
        for w in waiters {
            w.answer(Err(Failure::Gone(why.clone())));
        }
        if !killing {
            self.problems.record(ProblemKind::Exited, &why);
        }
    }

    /// Waits a moment for a process that closed its stdout to exit, kills what is left
    /// of its group, and reaps it: how it ended, in words.
    pub(super) fn reap_after_exit(&self) -> String {
        let mut child = lock(&self.child);
        let Some(c) = child.as_mut() else {
            return "was already reaped".into();
        };
        let deadline = Instant::now() + EXIT_GRACE;
        let mut exited = false;
        while Instant::now() < deadline {
            // Exited, but not reaped (WNOWAIT): its group id stays ours to signal.
            // SAFETY: waitid on our own child with a zeroed siginfo to fill in.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    c.id(),
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: si_pid is filled in by a successful waitid.
            if r == 0 && unsafe { info.si_pid() } != 0 {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Whatever it left running in its group goes with it.
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGKILL);
        let status = c.wait();
        locklab_servers::reaper::forget(c.id());
        *child = None;
        match (exited, status) {
            (true, Ok(s)) => format!("exited on its own ({s})"),
            (false, _) => "closed its stdout but kept running; it was killed".into(),
            (true, Err(e)) => format!("exited on its own (status unknown: {e})"),
        }
    }
}
pub(super) fn read_replies(stdout: ChildStdout, shared: &Shared, stderr_done: &mpsc::Receiver<()>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        match (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            shared.problems.record(
                ProblemKind::LineTooLong,
                &format!(
                    "wrote a line longer than {MAX_LINE} bytes, skipped: {}",
                    excerpt(&String::from_utf8_lossy(&line), 80)
                ),
            );
            // The rest of it, up to its newline.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_until(b'\n', &mut rest)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        shared.handle(&line);
    }
    shared.ended(stderr_done);
}

pub(super) fn copy_stderr(
    stderr: ChildStderr,
    mut file: File,
    shared: &Shared,
    _done: mpsc::Sender<()>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let _ = file.write_all(&line);
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if text.is_empty() {
            continue;
        }
        let mut tail = lock(&shared.stderr_tail);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}
