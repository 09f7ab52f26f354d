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

/// `locklab report DIR --format json` over the whole catalog, written once for all the
/// tests of this binary that read it (the pages, their layout in Chromium): the
/// directory and the JSON document. A catalog report checks every row's safety and
/// progress, the most any one command does here; two tests wrote it twice.
pub fn catalog_report() -> &'static (std::path::PathBuf, serde_json::Value) {
    static REPORT: std::sync::OnceLock<(std::path::PathBuf, serde_json::Value)> =
        std::sync::OnceLock::new();
    REPORT.get_or_init(|| {
        let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        // One directory per test process (nextest runs each test in its own); those
        // of processes that are gone are removed.
        for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("catalog-report-") {
                if !std::path::Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = tmp.join(format!("catalog-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().expect("utf-8 path");
        let out = locklab(&["report", d, "--format", "json"]);
        let doc = json_after(&out, 0);
        (dir, doc)
    })
}
