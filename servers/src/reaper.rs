//! Every server process this program started and has not yet reaped, so that a Ctrl-C
//! (or SIGTERM) handler can kill them all before the program exits. Drop covers normal
//! ends and panics; `PR_SET_PDEATHSIG` covers a `kill -9` of the program; this covers
//! the signals in between, which skip both.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
static DIRS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn dirs() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    DIRS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Notes a server's temp data dir, removed by [`kill_all`] (Drop removes it otherwise).
pub fn register_dir(dir: PathBuf) {
    dirs().insert(dir);
}

/// Forgets a data dir that was removed.
pub fn forget_dir(dir: &std::path::Path) {
    dirs().remove(dir);
}

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Notes a child that leads its own process group.
pub fn register(pid: u32) {
    live().insert(pid);
}

/// Forgets a child that was reaped.
pub fn forget(pid: u32) {
    live().remove(&pid);
}

/// How many server processes are alive.
pub fn count() -> usize {
    live().len()
}

/// SIGCONT (a paused server cannot die otherwise) and SIGKILL to every registered
/// process group, then removes their data dirs and this process's labs. Not async-signal-safe: call it from a
/// signal-handling thread.
///
/// Every server of the process, whoever started it: only for a process that is ending
/// (the Ctrl-C handler). A program that runs several runs in one process — a test
/// suite through the library — would kill its other runs' servers mid-run.
pub fn kill_all() {
    let pids: Vec<u32> = live().iter().copied().collect();
    for pid in pids {
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            // SAFETY: kill(2) on process groups this program created.
            unsafe {
                libc::kill(-pid, libc::SIGCONT);
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let gone: Vec<PathBuf> = dirs().iter().cloned().collect();
    for dir in gone {
        let _ = std::fs::remove_dir_all(&dir);
    }
    // The hosts of a split-brain run, and whatever still runs in them.
    crate::net::remove_own();
}
