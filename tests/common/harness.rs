//! A `locklab run` in a child process, for the tests that kill or interrupt it, and the
//! wait for what it started to be gone.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `locklab` with `args` (which keep the history in `keep`) and waits until
/// the history has `lines` lines: the workload is recording.
pub fn start_recording(args: &[&str], keep: &Path, lines: usize) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts locklab");
    let history = keep.join("history.jsonl");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let recorded = std::fs::read_to_string(&history)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if recorded >= lines {
            return child;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the harness never started recording");
}

/// Polls `left` until it finds nothing, for at most 5 s: what is still there then.
pub fn wait_gone(left: impl Fn() -> Vec<String>) -> Vec<String> {
    let start = Instant::now();
    loop {
        let found = left();
        if found.is_empty() || start.elapsed() > Duration::from_secs(5) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The processes `tells` something of, given each one's `/proc` entry: its pid, then
/// what it told.
pub fn processes(tells: impl Fn(&Path) -> Option<String>) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let said = tells(&entry.path())?;
            Some(format!("{}{said}", entry.file_name().to_string_lossy()))
        })
        .collect()
}

/// Interrupts `child` as Ctrl-C does; it must exit 130.
pub fn interrupt(child: &mut Child) {
    let raw = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(raw, libc::SIGINT);
    }
    let status = child.wait().expect("waits");
    assert_eq!(status.code(), Some(130));
}
