//! `locklab` as a user runs it: the built binary, and what it wrote.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The built binary run with `args`.
pub fn locklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .output()
        .expect("runs locklab")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The run exited `code` (what it wrote is the failure message).
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}{}", stdout(o), stderr(o));
}

/// `text` says `what` (the text is the failure message).
pub fn assert_says(text: &str, what: &str) {
    assert!(text.contains(what), "{what:?} not in {text}");
}

/// The JSON document on stdout of a run that exited `code` (its stderr says why not).
pub fn json_after(o: &Output, code: i32) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("json")
}
