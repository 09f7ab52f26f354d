//! One JSON contract: every `--format json` document a command prints — a verdict, a
//! list, an error, a usage error clap found — is one object carrying `schema_version`.

#[path = "common/cli.rs"]
mod cli;
use cli::{locklab, stdout};

const HISTORY: &str = r#"{"format":"locklab-history","version":1,"protocol":"test","backend":"simulated"}
{"process":0,"op":"acquire","phase":"invoke","time":1}
{"process":0,"op":"acquire","phase":"ok","time":2}
{"process":0,"op":"release","phase":"invoke","time":3}
{"process":0,"op":"release","phase":"ok","time":4}
"#;

#[test]
fn every_json_document_is_an_object_with_its_schema_version() {
    let dir = tempfile::tempdir().expect("temp dir");
    let history = dir.path().join("h.jsonl");
    std::fs::write(&history, HISTORY).expect("writes the history");
    let h = history.to_str().expect("utf-8 path");
    let site = dir.path().join("site");
    let edn = dir.path().join("h.edn");
    let protocol = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/protocols/lua-compare-and-delete.toml"
    );
    let commands: Vec<Vec<&str>> = vec![
        vec!["models"],
        vec!["check", "redis-failover"],
        vec!["check", "--protocol", protocol, "none"],
        vec!["explain", "redis-lua"],
        vec![
            "report",
            site.to_str().expect("utf-8 path"),
            "--only",
            "redis-lua",
        ],
        vec!["check-history", h],
        vec!["export", h, "--output", edn.to_str().expect("utf-8 path")],
        // Errors: a bad id, a bad file, and a usage error clap itself reports.
        vec!["check", "no-such-row"],
        vec!["check-history", "/no/such/file"],
        vec!["check", "redis-lua", "--clients", "many"],
    ];
    for args in commands {
        let mut args = args.clone();
        args.extend(["--format", "json"]);
        let out = locklab(&args);
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e})"));
        assert!(doc.is_object(), "{args:?}: {doc}");
        assert_eq!(doc["schema_version"], 1, "{args:?}: {doc}");
        let is_error = doc["verdict"] == "error";
        assert_eq!(
            is_error,
            args[1] == "no-such-row" || args[1] == "/no/such/file" || args.contains(&"many"),
            "{args:?}: {doc}"
        );
    }
}
