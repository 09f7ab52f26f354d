//! `locklab report DIR`, `explain --html` and `check --html` through the built binary:
//! the pages and the index are written, JSON on request, bad arguments exit 2.

use crate::common::cli;
use cli::{json_after, locklab, stderr, stdout};

#[test]
fn report_writes_the_index_and_one_page_per_scenario() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("site");
    let d = out_dir.to_str().expect("utf-8 path");
    let out = locklab(&[
        "report",
        d,
        "--only",
        "redis-failover,redis-lua",
        "--format",
        "json",
    ]);
    let doc = json_after(&out, 0);
    assert_eq!(doc["all_match"], true);
    assert_eq!(doc["scenarios"].as_array().map(Vec::len), Some(2));
    let index = std::fs::read_to_string(out_dir.join("index.html")).expect("index.html");
    assert!(
        index.contains("href=\"redis-failover.html\"") && index.contains("href=\"redis-lua.html\"")
    );
    assert!(index.contains("violates mutual exclusion") && index.contains("holds"));
    // redis-failover runs on real servers; no saved run yet (a build without `run`
    // knows no runnable rows and hints at none).
    assert_eq!(
        index.contains("not run yet (locklab run redis-failover)"),
        cfg!(feature = "run"),
        "{index}"
    );
    let failover = std::fs::read_to_string(out_dir.join("redis-failover.html")).expect("page");
    assert!(failover.contains("promote to master") && failover.contains("row overlap"));
    let lua = std::fs::read_to_string(out_dir.join("redis-lua.html")).expect("page");
    assert!(lua.contains("No counterexample"));
}

#[test]
fn report_reads_a_saved_run_for_the_agreement_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("runs")).expect("runs dir");
    std::fs::write(
        dir.path().join("runs/redis-failover.json"),
        r#"{"agreement":{"verdict":"violation","agrees":true}}"#,
    )
    .expect("saved run");
    let d = dir.path().to_str().expect("utf-8 path");
    let out = locklab(&["report", d, "--only", "redis-failover"]);
    assert_eq!(out.status.code(), Some(0));
    let index = std::fs::read_to_string(dir.path().join("index.html")).expect("index.html");
    assert!(
        index.contains("run: violation, agrees with the model"),
        "{index}"
    );
}

#[test]
fn explain_and_check_write_the_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    for cmd in ["explain", "check"] {
        let path = dir.path().join(format!("{cmd}.html"));
        let p = path.to_str().expect("utf-8 path");
        let out = locklab(&[cmd, "redis-failover", "--html", p]);
        assert_eq!(out.status.code(), Some(1), "a violation exits 1");
        // It says what it wrote, as report and export do.
        assert!(stderr(&out).contains(&format!("wrote {p}")), "{cmd}");
        let html = std::fs::read_to_string(&path).expect("page written");
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("Sentinel") && html.contains("promote to master"));
    }
    // The text story is unchanged by --html.
    let out = locklab(&[
        "explain",
        "redis-failover",
        "--html",
        dir.path().join("x.html").to_str().unwrap_or("x.html"),
    ]);
    assert!(stdout(&out).contains("2. Sentinel promotes replica redis1 to master"));
}

#[test]
fn bad_arguments_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path().to_str().expect("utf-8 path");
    let out = locklab(&["report", d, "--only", "redis-failovr", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json error");
    assert!(doc["error"]
        .as_str()
        .is_some_and(|e| e.contains("redis-failover")));
    // A directory that cannot be created (its parent is a file).
    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("file");
    let out = locklab(&["report", file.join("sub").to_str().unwrap_or("?")]);
    assert_eq!(out.status.code(), Some(2));
    let out = locklab(&[
        "explain",
        "redis-lua",
        "--html",
        file.join("sub/x.html").to_str().unwrap_or("?"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--html"));
    let out = locklab(&["report"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Every scenario of the catalog gets its page, whatever its family draws (a family
/// without lanes of its own falls back to one lane of step texts): none may fail.
#[test]
fn report_covers_the_whole_catalog() {
    let (dir, doc) = cli::catalog_report();
    let ids: Vec<String> = doc["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect();
    assert!(ids.iter().any(|i| i.starts_with("etcd-")) && ids.iter().any(|i| i.starts_with("zk-")));
    for id in ids {
        let page = std::fs::read_to_string(dir.join(format!("{id}.html")))
            .unwrap_or_else(|e| panic!("{id}.html: {e}"));
        assert!(page.contains("<svg"), "{id}: no diagram");
        // Every family draws its actors, not the one-lane fallback.
        assert!(
            page.contains("<g class=\"hdr client")
                && (page.contains("<g class=\"hdr node\">")
                    || page.contains("<g class=\"hdr resource\">"))
                && !page.contains("<title>system</title>"),
            "{id}: no lanes for the clients and the servers"
        );
    }
}
