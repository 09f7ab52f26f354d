//! Temp dirs that outlive nobody: a server's data dir, a run's history dir.
//!
//! Drop removes one, and [`crate::reaper`] removes every live one on Ctrl-C. What
//! neither covers is a `kill -9` (or a test runner killing a test binary, or a
//! `std::process::exit` that skips Drop): the kernel kills the servers
//! (`PR_SET_PDEATHSIG`), but their dirs stay. So each dir holds an `flock` on a
//! `.owner` file inside it for as long as its owner lives, and the first scratch dir a
//! process makes sweeps away every `locklab-*` dir whose owner lock nobody holds any
//! more. A lock, unlike a pid, means the same across pid namespaces (a CI container
//! sharing `/tmp`) and is never reused by an unrelated process.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Once;

use crate::reaper;

/// The file whose lock says the dir's owner is alive.
const OWNER: &str = ".owner";

static SWEEP: Once = Once::new();

/// A temp dir owned by this process: removed on drop, and by the next locklab process
/// if this one dies without dropping it.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    /// Holds the owner lock; closed (so unlocked) after the dir is removed.
    _owner: File,
}

impl ScratchDir {
    /// Makes `std::env::temp_dir()/name` (a name starting `locklab-` is what the sweep
    /// looks at) and takes its owner lock; sweeps dead owners' dirs first, once per
    /// process.
    ///
    /// # Errors
    /// The dir or its owner file cannot be made, or its lock cannot be taken.
    pub fn create(name: &str) -> std::io::Result<ScratchDir> {
        SWEEP.call_once(|| {
            sweep();
        });
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path)?;
        // Locked under another name, then renamed: an owner file nobody holds is
        // always a dead owner's, never one about to be locked.
        let claim = path.join(format!("{OWNER}.{}", std::process::id()));
        let owner = File::create(&claim)?;
        if !try_lock(&owner) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!("{} is owned by another process", path.display()),
            ));
        }
        std::fs::rename(&claim, path.join(OWNER))?;
        reaper::register_dir(path.clone());
        Ok(ScratchDir {
            path,
            _owner: owner,
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        reaper::forget_dir(&self.path);
    }
}

/// An exclusive lock on `file`, without waiting.
fn try_lock(file: &File) -> bool {
    // SAFETY: flock(2) on a descriptor `file` owns for the whole call.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Removes every `locklab-*` dir in the temp dir whose owner is dead; returns how many.
/// Dirs without an owner file (the shared port locks, a user's notes) are not ours to
/// judge and stay.
pub fn sweep() -> usize {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("locklab-") {
            continue;
        }
        let dir = entry.path();
        if owner_is_dead(&dir) && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether `dir` has an owner file that nobody holds locked.
fn owner_is_dead(dir: &Path) -> bool {
    // Opened read-only: a sweep must never create an owner file.
    File::open(dir.join(OWNER)).is_ok_and(|f| try_lock(&f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_owners_dir_stays_and_drop_removes_it() {
        let dir = ScratchDir::create(&format!("locklab-scratch-test-{}", std::process::id()))
            .expect("scratch dir");
        let path = dir.path().to_path_buf();
        assert!(!owner_is_dead(&path), "held by this process");
        sweep();
        assert!(path.is_dir(), "a live owner's dir survives a sweep");
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn an_owner_file_nobody_holds_marks_the_dir_dead() {
        let path =
            std::env::temp_dir().join(format!("locklab-scratch-dead-{}", std::process::id()));
        std::fs::create_dir_all(&path).expect("dir");
        assert!(!owner_is_dead(&path), "no owner file: not ours to judge");
        drop(File::create(path.join(OWNER)).expect("owner"));
        assert!(owner_is_dead(&path));
        sweep();
        assert!(!path.exists(), "swept");
    }
}
