//! A search that stops before it has explored everything says where it was: Ctrl-C
//! answers with what the search explored (a violation already proven, or unknown with
//! its states), and `--stop-at-first` ends at the first violation, as Spin and TLC do.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::cli;
use cli::{assert_exit, assert_says, json_after, locklab, stdout};

/// `locklab` with `args`, its output piped.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts locklab")
}

/// Whether `pid` has a handler for SIGINT (`SigCgt` in its status): before, a SIGINT
/// would kill it outright, which is not what this test is about.
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Sends SIGINT to `child` once it handles it and its search has run `after`; its
/// output once it exits (within a minute).
fn interrupt(mut child: Child, after: Duration) -> std::process::Output {
    let pid = child.id();
    let start = Instant::now();
    while !catches_sigint(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    let pid_t = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill(2) on our own child's pid, which it has not been reaped yet.
    assert_eq!(unsafe { libc::kill(pid_t, libc::SIGINT) }, 0);
    let waited = Instant::now();
    loop {
        if child.try_wait().expect("waits").is_some() {
            break;
        }
        if waited.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still searching a minute after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("its output")
}

/// Ctrl-C in a search that has proven a violation and goes on for the other property:
/// the violation, with its story, and the rest unknown; exit 1. In one that has proven
/// nothing: unknown with the states explored, exit 3. Text and JSON alike.
#[test]
fn ctrl_c_answers_with_what_the_search_explored() {
    // Six clients: the failover's 3-step story is found at once, the search for a
    // foreign release goes on for minutes.
    let out = interrupt(
        spawn(&[
            "check",
            "redis-failover",
            "--clients",
            "6",
            "--format",
            "json",
        ]),
        Duration::from_millis(1500),
    );
    let v = json_after(&out, 1);
    assert_eq!(v["verdict"], "violation", "{v}");
    assert_eq!(v["stopped_by"], "interrupt", "{v}");
    assert!(v["stats"]["states"].as_u64().is_some_and(|n| n > 0), "{v}");
    let steps = v["stories"][0]["steps"].as_array().expect("a story");
    assert_eq!(steps.len(), 3, "still the shortest story: {v}");
    let out = interrupt(
        spawn(&["check", "etcd-lease-fenced", "--clients", "5"]),
        Duration::from_millis(1500),
    );
    assert_exit(&out, 3);
    let text = stdout(&out);
    assert_says(
        &text,
        "UNKNOWN: the search was interrupted (Ctrl-C) before an answer",
    );
    assert_says(&text, "explored ");
    assert_says(&text, "(not decided)");
    assert_says(&cli::stderr(&out), "interrupted");
}

/// `--stop-at-first`: the first violation found, as short as without the flag, and
/// the properties not yet violated unknown; a search that finds none is as without it.
#[test]
fn stop_at_first_ends_at_the_first_violation_with_its_shortest_story() {
    let all = json_after(
        &locklab(&["check", "redis-del-unconditional", "--format", "json"]),
        1,
    );
    let first = json_after(
        &locklab(&[
            "check",
            "redis-del-unconditional",
            "--stop-at-first",
            "--format",
            "json",
        ]),
        1,
    );
    assert_eq!(first["stopped_by"], "first_violation", "{first}");
    let found = first["violated"].as_array().expect("violated");
    assert_eq!(found.len(), 1, "{first}");
    let same = all["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|s| s["property"] == found[0])
        .expect("the full search's story of that property");
    assert_eq!(
        first["stories"][0]["steps"].as_array().map(Vec::len),
        same["steps"].as_array().map(Vec::len),
        "{first}"
    );
    assert!(first["stats"]["states"].as_u64() < all["stats"]["states"].as_u64());
    let text = stdout(&locklab(&[
        "check",
        "redis-del-unconditional",
        "--stop-at-first",
    ]));
    assert_says(
        &text,
        "(the search reached its first violation (--stop-at-first): any other property is unknown)",
    );
    assert_says(&text, "(matches so far)");
    // Nothing to find: the whole space, and the verdict it always had.
    let o = locklab(&["check", "redis-lua", "--stop-at-first", "--format", "json"]);
    let v = json_after(&o, 0);
    assert_eq!(v["verdict"], "ok", "{v}");
    assert!(v["stopped_by"].is_null(), "{v}");
}
