//! The diagram pages in a real browser: headless Chromium loads a page, its script runs
//! to the end (it marks `<html data-diagram="ready">`) and logs no error. Chromium is
//! a dependency like the servers (`ci/setup.sh` installs it): missing, the test fails.
//! It runs with the `backends` feature, with the other tests that need what
//! `ci/setup.sh` installs.
#![cfg(feature = "backends")]

use std::path::Path;
use std::process::{Command, Output};

/// The browser, found once per test process (asking it for its version costs a start).
fn chromium() -> &'static str {
    static FOUND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let bin = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
        let found = Command::new(&bin).arg("--version").output();
        match found {
            Ok(o) if o.status.success() => bin,
            _ => panic!(
                "headless Chromium is needed to test the pages: `{bin}` did not run (install it with ci/setup.sh, or set CHROMIUM)"
            ),
        }
    })
}

/// Loads `page` and dumps the DOM after its scripts ran, with the console on stderr.
fn load(page: &Path) -> Output {
    load_at(page, "")
}

/// As [`load`], at `fragment` (`#step=1`, or empty).
fn load_at(page: &Path, fragment: &str) -> Output {
    browse(page, fragment, &["--dump-dom"])
}

/// Headless Chromium on `page` at `fragment` in a 1400-pixel-wide window, with `what`
/// (`--dump-dom`, `--screenshot=…`).
fn browse(page: &Path, fragment: &str, what: &[&str]) -> Output {
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
            "--hide-scrollbars",
            "--window-size=1400,1400",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(what)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .expect("runs chromium")
}

/// A screenshot of `page` at `fragment`, as PNG bytes.
fn screenshot(page: &Path, fragment: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let png = dir.path().join("shot.png");
    let out = browse(
        page,
        fragment,
        &[&format!("--screenshot={}", png.display())],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&png).expect("the screenshot")
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
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `locklab report DIR ARGS`, which writes the pages and matches the catalog.
fn report(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("report")
        .arg(dir)
        .args(args)
        .output()
        .expect("runs locklab");
    assert_eq!(
        out.status.code(),
        Some(0),
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
    report(
        dir.path(),
        &[
            "--only",
            "redis-failover,redlock-restart,mysql-getlock-conn-kill",
        ],
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
    // Porcupine's logs have no times: rows say where they are in the history, not
    // "0 ms"; and ten clients fit a 1400-pixel window, without a lock or nemesis lane
    // the history has no event for.
    assert!(dom.contains("positions in the history") && !dom.contains(">0 ms<"));
    assert!(
        dom.contains("data-overflow=\"0\""),
        "ten clients scroll sideways"
    );
    assert!(!dom.contains("<title>nemesis</title>") && !dom.contains("(lock)</title>"));
}

/// Stepping through `redis-failover` changes the picture at every step, keeps the
/// lesson for the last one, and draws the crux: the replication that never happened,
/// from the old master to the replica Sentinel promotes.
#[test]
fn stepping_through_the_failover_story_shows_each_step_and_the_lost_replication() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("failover.html");
    write_page(&["check", "redis-failover"], &page);
    let shots: Vec<Vec<u8>> = (0..=3)
        .map(|k| screenshot(&page, &format!("#step={k}")))
        .collect();
    for k in 1..shots.len() {
        assert_ne!(
            shots[k - 1],
            shots[k],
            "steps {} and {k} look the same",
            k - 1
        );
    }
    for k in 0..3 {
        let dom =
            String::from_utf8_lossy(&load_at(&page, &format!("#step={k}")).stdout).into_owned();
        assert!(
            dom.contains("class=\"why later\""),
            "step {k} shows the lesson"
        );
    }
    let dom = String::from_utf8_lossy(&load(&page).stdout).into_owned();
    assert!(
        dom.contains("class=\"arrow lost\" data-from=\"redis0\" data-to=\"redis1\""),
        "no lost replication arrow: {dom}"
    );
    assert!(dom.contains("never replicated: SET lock c0"), "{dom}");
}

/// Every page of `locklab report` fits a 1400-pixel window: neither the page nor any
/// diagram's box scrolls sideways (the page's script measures both).
#[test]
fn every_report_page_fits_a_1400_pixel_window() {
    let (dir, _) = crate::common::cli::catalog_report();
    let mut pages: Vec<_> = std::fs::read_dir(dir)
        .expect("the pages")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    pages.sort();
    assert!(pages.len() > 40, "{pages:?}");
    // Two browsers at a time: a page load is mostly the browser's start-up.
    let halves: Vec<&[std::path::PathBuf]> = pages.chunks(pages.len().div_ceil(2)).collect();
    let wide: Vec<String> = crate::common::machine::side_by_side(&halves, |half| {
        half.iter()
            .filter_map(|p| {
                let dom = String::from_utf8_lossy(&load(p).stdout).into_owned();
                (!dom.contains("data-overflow=\"0\"")).then(|| {
                    let at = dom
                        .find("data-overflow=")
                        .map_or("no measure", |i| &dom[i..(i + 22).min(dom.len())]);
                    format!("{}: {at}", p.display())
                })
            })
            .collect::<Vec<_>>()
    })
    .concat();
    assert!(wide.is_empty(), "pages wider than 1400 px: {wide:?}");
}

/// A real failover run's page draws each master in its own lane: the first holder's
/// `SET` reaches the old master, the second holder's the replica Sentinel promoted.
#[test]
fn the_failover_run_page_has_a_lane_per_master_and_a_set_to_each() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("run.html");
    {
        let _share = crate::common::machine::beside();
        // The run's history is kept for a failure to be understood (replaced by the
        // next run of this test).
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("runs")
            .join("page-redis-failover-seed-1");
        let _ = std::fs::remove_dir_all(&out);
        let out = out.to_str().expect("utf-8");
        write_page(
            &["run", "redis-failover", "--seed", "1", "--out", out],
            &page,
        );
    }
    let dom = String::from_utf8_lossy(&load(&page).stdout).into_owned();
    for lane in ["master", "replica1"] {
        assert!(
            dom.contains(&format!("<title>{lane}</title>")),
            "no lane {lane}: {dom}"
        );
        let to = format!("data-to=\"server:{lane}\"");
        let set = dom
            .match_indices(&to)
            .any(|(i, _)| dom[i..(i + 600).min(dom.len())].contains("SET locklab:lock"));
        assert!(set, "no SET drawn to {lane}");
    }
    // The model's failover step links to the run's faults, and run rows to model steps.
    let step = dom
        .find("<span>Sentinel promotes replica")
        .map(|i| &dom[i..(i + 400).min(dom.len())])
        .expect("the model's failover step");
    assert!(
        step.contains("class=\"peer\" href=\"#story=0&amp;step="),
        "{step}"
    );
    assert!(dom.contains("↔ model step 1"), "{dom}");
}

/// Lecture mode (`#play`): the story plays itself a step every few seconds and stops at
/// the last step with the lesson shown. Chromium's virtual time runs the timers.
#[test]
fn lecture_mode_plays_the_story_to_its_lesson() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("failover.html");
    write_page(&["check", "redis-failover"], &page);
    let at = |budget_ms: u32| {
        let out = browse(
            &page,
            "#play",
            &[&format!("--virtual-time-budget={budget_ms}"), "--dump-dom"],
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let early = at(1000);
    assert!(early.contains("Step 0 of 3"), "{early}");
    assert!(early.contains("❚❚ pause") && early.contains("class=\"why later\""));
    let done = at(20_000);
    assert!(done.contains("Step 3 of 3"), "{done}");
    assert!(
        done.contains("▶ play") && !done.contains("why later"),
        "{done}"
    );
}
