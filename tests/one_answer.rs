//! One rule for every command (README, "Exit codes"): the text's headline, the JSON
//! `verdict` and the exit code are the same answer, over every property asked.

use crate::common::cli;
use cli::{locklab, stdout};

/// The answer a text states: the first verdict word after a `: ` (a model's or a
/// history's headline), or `matrix`'s and `report`'s closing line.
fn said(text: &str) -> Option<&'static str> {
    for line in text.lines() {
        for (word, answer) in [
            ("VIOLATED", "violation"),
            ("VIOLATION", "violation"),
            ("UNKNOWN", "unknown"),
            ("HOLDS", "ok"),
            ("OK", "ok"),
        ] {
            if line.contains(&format!(": {word}")) {
                return Some(answer);
            }
        }
        if line.contains("every verdict matches the catalog") {
            return Some("ok");
        }
        if line.contains("SOME VERDICTS DIFFER") {
            return Some("violation");
        }
        if line.contains("INTERRUPTED") {
            return Some("unknown");
        }
    }
    None
}

fn code(answer: &str) -> i32 {
    match answer {
        "ok" => 0,
        "violation" => 1,
        _ => 3,
    }
}

#[test]
fn headline_json_verdict_and_exit_code_agree() {
    let root = env!("CARGO_MANIFEST_DIR");
    let protocols = format!("{root}/examples/protocols");
    let broken = format!("{protocols}/write-ups/setnx-finally.toml");
    let sound = format!("{protocols}/lua-compare-and-delete.toml");
    let kv = format!("{root}/traces/tests/data/porcupine/kv");
    let (ok_history, bad_history) = (format!("{kv}/c01-ok.txt"), format!("{kv}/c10-bad.txt"));
    let site = tempfile::tempdir().expect("tempdir");
    let site = site.path().to_str().expect("utf-8 path");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["check", "redis-lua"], "ok"),
        (vec!["check", "redis-failover"], "violation"),
        (
            vec!["check", "redis-failover", "--stop-at-first"],
            "violation",
        ),
        // Safety holds; a promise does not, or is undecided: the answer is the promise's.
        (vec!["check", "redis-lua", "--progress"], "violation"),
        (
            vec![
                "check",
                "etcd-lease-crash",
                "--progress",
                "--max-states",
                "5600",
            ],
            "unknown",
        ),
        (
            vec!["check", "redlock-delayed-restart", "--max-states", "100"],
            "unknown",
        ),
        (vec!["check", "--protocol", &broken, "none"], "violation"),
        (vec!["check", "--protocol", &sound, "none"], "ok"),
        (vec!["explain", "redis-lua"], "ok"),
        (vec!["explain", "redis-failover"], "violation"),
        (vec!["check-history", &ok_history], "ok"),
        (vec!["check-history", &bad_history], "violation"),
        (vec!["matrix", "--only", "redis-lua,redis-failover"], "ok"),
        (vec!["report", site, "--only", "redis-lua"], "ok"),
    ];
    for (args, answer) in cases {
        let text = locklab(&args);
        let mut json_args = args.clone();
        json_args.extend(["--format", "json"]);
        let json = locklab(&json_args);
        let doc: serde_json::Value =
            serde_json::from_str(&stdout(&json)).expect("one JSON document");
        let seen = (
            said(&stdout(&text)),
            doc["verdict"].as_str(),
            text.status.code(),
            json.status.code(),
        );
        assert_eq!(
            seen,
            (
                Some(answer),
                Some(answer),
                Some(code(answer)),
                Some(code(answer))
            ),
            "{args:?}: (headline, JSON verdict, exit code, JSON's exit code)\n{}",
            stdout(&text)
        );
    }
}
