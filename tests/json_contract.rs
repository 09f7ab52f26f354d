//! One JSON contract: every `--format json` document a command prints — a verdict, a
//! list, an error, a usage error clap found — is one object carrying `schema_version`,
//! and validates against the schema `locklab generate schema` derives from its type.
//! Validation is strict here: an object field the schema does not name is an error, so
//! a field added to the output without its type fails this test.

use crate::common::cli;
use crate::common::schema;
use cli::{locklab, stdout};
use schema::{assert_valid, schemas};

const HISTORY: &str = r#"{"format":"locklab-history","version":1,"protocol":"test","backend":"simulated"}
{"process":0,"op":"acquire","phase":"invoke","time":1}
{"process":0,"op":"acquire","phase":"ok","time":2}
{"process":0,"op":"release","phase":"invoke","time":3}
{"process":0,"op":"release","phase":"ok","time":4}
"#;

#[test]
fn every_json_document_matches_its_schema() {
    let schemas = schemas();
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
    let site = site.to_str().expect("utf-8 path");
    let edn = edn.to_str().expect("utf-8 path");
    // (document, command): each command that prints a document, and each error.
    let commands: Vec<(&str, Vec<&str>)> = vec![
        ("models", vec!["models"]),
        // A row of each kind of progress document: broken, kept with fifo, broken
        // only when clients lock again and again, and no lock at all.
        (
            "models",
            vec![
                "models",
                "--progress",
                "--only",
                "redis-setnx-no-ttl,zk-sequential,redis-lua,inventory-no-lock",
            ],
        ),
        ("check", vec!["check", "redis-failover"]),
        ("check", vec!["check", "redis-setnx-no-ttl", "--progress"]),
        (
            "check",
            vec!["check", "redlock-delayed-restart", "--max-states", "100"],
        ),
        (
            "check-protocol",
            vec!["check", "--protocol", protocol, "none"],
        ),
        (
            "check-protocol",
            vec!["check", "--protocol", protocol, "--progress"],
        ),
        ("explain", vec!["explain", "redis-lua"]),
        ("matrix", vec!["matrix"]),
        ("report", vec!["report", site, "--only", "redis-lua"]),
        ("check-history", vec!["check-history", h]),
        ("export", vec!["export", h, "--output", edn]),
        ("generate", vec!["generate", "completions", "bash"]),
        ("generate", vec!["generate", "schema", "check"]),
        // Errors: a bad id, a bad file, and a usage error clap itself reports.
        ("error", vec!["check", "no-such-row"]),
        ("error", vec!["check-history", "/no/such/file"]),
        ("error", vec!["check", "redis-lua", "--clients", "many"]),
    ];
    for (name, args) in commands {
        let mut args = args.clone();
        args.extend(["--format", "json"]);
        let out = locklab(&args);
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e})"));
        assert!(doc.is_object(), "{args:?}: {doc}");
        assert_eq!(doc["schema_version"], 2, "{args:?}: {doc}");
        assert_eq!(
            doc["verdict"] == "error",
            name == "error",
            "{args:?}: {doc}"
        );
        let schema = schemas
            .get(name)
            .unwrap_or_else(|| panic!("no schema named {name}"));
        assert_valid(name, schema, &doc, &args);
    }
}

/// The vocabulary is one: verdicts are `ok`/`violation`/`unknown`, properties their
/// kebab-case ids, wherever a document names them.
#[test]
fn every_document_speaks_one_vocabulary() {
    let schemas = schemas();
    let mut verdicts = std::collections::BTreeSet::new();
    let mut properties = std::collections::BTreeSet::new();
    fn walk(
        v: &serde_json::Value,
        verdicts: &mut std::collections::BTreeSet<String>,
        properties: &mut std::collections::BTreeSet<String>,
    ) {
        match v {
            serde_json::Value::Object(o) => {
                if let Some(defs) = o.get("$defs").and_then(|d| d.as_object()) {
                    for (name, def) in defs {
                        // An enum's words: `enum`, or each branch's `const`.
                        let listed = def["enum"].as_array().into_iter().flatten().cloned();
                        let branches = def["oneOf"].as_array().into_iter().flatten();
                        let consts = branches.map(|b| b["const"].clone());
                        let words = listed.chain(consts);
                        let words = words.filter_map(|w| w.as_str().map(str::to_string));
                        match name.as_str() {
                            "Verdict" => verdicts.extend(words),
                            "Property" => properties.extend(words),
                            _ => {}
                        }
                    }
                }
                o.values().for_each(|v| walk(v, verdicts, properties));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, verdicts, properties)),
            _ => {}
        }
    }
    for schema in schemas.values() {
        walk(schema, &mut verdicts, &mut properties);
    }
    assert_eq!(
        verdicts.into_iter().collect::<Vec<_>>(),
        ["ok", "unknown", "violation"]
    );
    assert!(properties.contains("mutual-exclusion"), "{properties:?}");
    assert!(
        properties.iter().all(|p| !p.contains(' ')),
        "{properties:?}"
    );
}

#[test]
fn a_schema_by_name_and_an_unknown_name() {
    let out = locklab(&["generate", "schema", "check"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        schema["title"], "locklab --format json: check",
        "{schema:#}"
    );
    let out = locklab(&["generate", "schema", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        cli::stderr(&out).contains("known: models"),
        "{}",
        cli::stderr(&out)
    );
}

/// `explore` prints its document before it serves (and serves until killed).
#[test]
fn explore_prints_a_valid_document_before_it_serves() {
    use std::io::BufRead;
    // A port free a moment ago: explore says so if it was taken since.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let args = ["explore", "redis-lua", "--addr", &addr, "--format", "json"];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runs locklab");
    let mut text = String::new();
    let stdout = child.stdout.take().expect("stdout");
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        text.push_str(&line);
        text.push('\n');
        if line == "}" {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    let name = if doc["verdict"] == "error" {
        "error"
    } else {
        "explore"
    };
    schema::assert_document(name, &doc, &args);
    if name == "explore" {
        assert_eq!(doc["serving"], format!("http://{addr}"));
    }
}

/// A file the user names that is missing is an input error wherever it is named: a
/// history, a protocol file, a gate config.
#[test]
fn a_missing_file_is_an_input_error_in_every_command() {
    let mut commands = vec![
        vec!["check-history", "/no/such/history.jsonl"],
        vec!["check", "--protocol", "/no/such/protocol.toml"],
        vec!["export", "/no/such/history.jsonl"],
    ];
    if cfg!(feature = "run") {
        commands.push(vec!["gate", "/no/such/gate.toml"]);
    }
    for mut args in commands {
        args.extend(["--format", "json"]);
        let out = locklab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one document");
        assert_eq!(doc["error_kind"], "input", "{args:?}: {doc}");
        assert!(
            doc["error"]
                .as_str()
                .is_some_and(|e| e.contains("/no/such/")),
            "{args:?}: {doc}"
        );
    }
}
