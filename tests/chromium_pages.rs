//! The diagram pages in a real browser: headless Chromium loads a page, its script runs
//! to the end (it marks `<html data-diagram="ready">`) and logs no error. Chromium is
//! a dependency like the servers (`ci/setup.sh` installs it): missing, the test fails.
//! It runs with the `backends` feature, with the other tests that need what
//! `ci/setup.sh` installs.
#![cfg(feature = "backends")]

use std::path::Path;
use std::process::{Command, Output};

fn chromium() -> String {
    let bin = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let found = Command::new(&bin).arg("--version").output();
    match found {
        Ok(o) if o.status.success() => bin,
        _ => panic!(
            "headless Chromium is needed to test the pages: `{bin}` did not run (install it with ci/setup.sh, or set CHROMIUM)"
        ),
    }
}

/// Loads `page` and dumps the DOM after its scripts ran, with the console on stderr.
fn load(page: &Path) -> Output {
    load_at(page, "")
}

/// As [`load`], at `fragment` (`#step=1`, or empty).
fn load_at(page: &Path, fragment: &str) -> Output {
    let profile = tempfile::tempdir().expect("profile dir");
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .expect("runs chromium")
}

/// Runs `locklab ARGS --html PAGE`, which finds a violation (exit 1).
fn write_page(args: &[&str], page: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .arg("--html")
        .arg(page)
        .output()
        .expect("runs locklab");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn assert_renders(page: &Path) {
    let out = load(page);
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "chromium failed on {}: {log}",
        page.display()
    );
    assert!(
        dom.contains("data-diagram=\"ready\""),
        "the page's script did not finish on {}: {log}",
        page.display()
    );
    assert!(
        !log.contains("Uncaught") && !log.contains("Refused to"),
        "script errors on {}: {log}",
        page.display()
    );
    // ci/render-pages.sh sizes its screenshots to this.
    assert!(dom.contains("data-height=\""), "{}", page.display());
    // After the script ran every step is shown and captioned.
    assert!(dom.contains("All steps."), "{}", page.display());
}

#[test]
fn pages_render_in_chromium_without_script_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["report"])
        .arg(dir.path())
        .args([
            "--only",
            "redis-failover,redlock-restart,mysql-getlock-conn-kill",
        ])
        .output()
        .expect("runs locklab");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for id in [
        "redis-failover",
        "redlock-restart",
        "mysql-getlock-conn-kill",
    ] {
        assert_renders(&dir.path().join(format!("{id}.html")));
    }
}

/// A step's address opens the story at that step: the step highlighted, those before it
/// dimmed, those after it hidden, its state beside the caption, and the lesson kept
/// for the last step.
#[test]
fn a_step_link_opens_the_story_at_that_step() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("failover.html");
    write_page(&["check", "redis-failover"], &page);
    let out = load_at(&page, "#step=1");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("data-diagram=\"ready\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dom.contains("Step 1 of 3: c0: SET lock c0 NX PX 2"),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"why later\""),
        "the lesson waits for the last step"
    );
    assert!(
        ["row past", "row current", "future\""]
            .iter()
            .all(|c| dom.contains(c)),
        "{dom}"
    );
    assert!(
        dom.contains("redis1 (replica): lock=-, 1 write(s) not yet replicated"),
        "the state beside the caption"
    );
    let last = String::from_utf8_lossy(&load_at(&page, "#step=3").stdout).into_owned();
    assert!(last.contains("Step 3 of 3"), "{last}");
    assert!(
        !last.contains("why later"),
        "the lesson shows at the last step"
    );
}

/// `check-history --html` draws an imported history (Porcupine's, no lock, ten
/// clients) in the same page frame: it renders, its script finishes, and it says the
/// verdict.
#[test]
fn a_checked_history_page_renders_in_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("kv.html");
    let history =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/tests/data/porcupine/kv/c10-bad.txt");
    write_page(&["check-history", history.to_str().expect("utf-8")], &page);
    assert_renders(&page);
    let dom = String::from_utf8_lossy(&load(&page).stdout).into_owned();
    assert!(dom.contains("VIOLATION"), "{dom}");
    assert!(dom.contains("kv.linearizability.html"), "{dom}");
}
