//! `locklab gate`: the example configs on real servers — redis-py's Lock (a library
//! nobody here wrote, through the external-client protocol) passes its gate on the four
//! Redis scenarios, agreeing with the models; a lock without owner check fails its
//! gate — with JUnit XML that an XML parser reads; and a bad config is exit 2 naming
//! the line and key, before any server starts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
#[cfg(feature = "backends")]
use std::sync::Mutex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gate(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("gate")
        .args(args)
        .output()
        .expect("runs locklab gate")
}

/// One gate at a time: they share two cores, and Sentinel's timing must not starve.
#[cfg(feature = "backends")]
static SERIAL: Mutex<()> = Mutex::new(());

/// A testcase of the JUnit document: (scenario, requirement, failure or error text).
#[cfg(feature = "backends")]
#[derive(Debug)]
struct Case {
    classname: String,
    name: String,
    failure: Option<String>,
    error: Option<String>,
}

/// Reads the JUnit XML as a CI dashboard would: with an XML parser, checking that the
/// counts on the root agree with the testcases.
#[cfg(feature = "backends")]
fn junit(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).expect("junit.xml written");
    let doc = roxmltree::Document::parse(&text).expect("junit.xml is well-formed XML");
    let suites = doc.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    let mut cases = Vec::new();
    for case in suites.descendants().filter(|n| n.has_tag_name("testcase")) {
        let text_of = |tag: &str| {
            case.children().find(|c| c.has_tag_name(tag)).map(|c| {
                format!(
                    "{} {}",
                    c.attribute("message").unwrap_or(""),
                    c.text().unwrap_or("")
                )
            })
        };
        cases.push(Case {
            classname: case.attribute("classname").expect("classname").to_string(),
            name: case.attribute("name").expect("name").to_string(),
            failure: text_of("failure"),
            error: text_of("error"),
        });
    }
    let count = |attr: &str| -> usize {
        suites
            .attribute(attr)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("testsuites {attr}"))
    };
    assert_eq!(count("tests"), cases.len());
    assert_eq!(
        count("failures"),
        cases.iter().filter(|c| c.failure.is_some()).count()
    );
    assert_eq!(
        count("errors"),
        cases.iter().filter(|c| c.error.is_some()).count()
    );
    cases
}

#[cfg(feature = "backends")]
fn run_gate(config: &Path, out: &Path) -> (Option<i32>, serde_json::Value) {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let o = gate(&[
        config.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    let json = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "gate prints one JSON document ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), json)
}

/// The first "done when": redis-py's `Lock` runs through the protocol on the
/// four Redis scenarios, and every run agrees with its model — breaking exactly what
/// the model says the scenario breaks.
#[cfg(feature = "backends")]
#[test]
fn redis_py_lock_passes_its_gate_agreeing_with_the_model_on_four_redis_scenarios() {
    let out = tempfile::tempdir().expect("tempdir");
    let (code, json) = run_gate(
        &root().join("examples/redis-py/locklab-gate.toml"),
        out.path(),
    );
    assert_eq!(code, Some(0), "{json:#}");
    assert_eq!(json["verdict"], "pass");
    let scenarios = json["scenarios"].as_array().expect("scenarios");
    let verdicts: Vec<(&str, &str)> = scenarios
        .iter()
        .map(|s| {
            assert_eq!(s["agreement"]["at_least_as_safe"], "yes", "{s:#}");
            assert_eq!(s["agreement"]["exact"], "yes", "{s:#}");
            assert!(
                s.get("client_problems")
                    .is_none_or(|p| p.as_array().is_some_and(Vec::is_empty)),
                "redis-py's client keeps to the protocol: {s:#}"
            );
            (
                s["id"].as_str().unwrap_or(""),
                s["agreement"]["verdict"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("redis-lua", "ok"),
            ("redis-lua-pause", "violation"),
            ("redis-failover", "violation"),
            ("redis-failover-wait", "ok"),
        ]
    );
    let cases = junit(&out.path().join("junit.xml"));
    assert_eq!(cases.len(), 8, "{cases:#?}");
    assert!(
        cases
            .iter()
            .all(|c| c.failure.is_none() && c.error.is_none()),
        "{cases:#?}"
    );
    assert!(cases
        .iter()
        .any(|c| c.classname == "locklab.redis-failover-wait"
            && c.name == "at-least-as-safe-as-model"));
    let index = std::fs::read_to_string(out.path().join("index.html")).expect("index.html");
    assert!(
        index.contains("04-redis-failover-wait.html"),
        "the index links each run"
    );
    assert!(out.path().join("02-redis-lua-pause.html").is_file());
    assert!(out
        .path()
        .join("02-redis-lua-pause/clients/c0.stderr")
        .is_file());
}

/// The broken lock releases with a plain `DEL`: on `redis-lua-pause` a holder stopped
/// past its lease deletes the next holder's key. Its gate fails, and the failure names
/// the scenario, the property and the history lines that prove it.
#[cfg(feature = "backends")]
#[test]
fn a_lock_without_owner_check_fails_its_gate_with_the_history_lines() {
    let out = tempfile::tempdir().expect("tempdir");
    let (code, json) = run_gate(
        &root().join("examples/broken-del/locklab-gate.toml"),
        out.path(),
    );
    assert_eq!(code, Some(1), "{json:#}");
    assert_eq!(json["verdict"], "fail");
    let cases = junit(&out.path().join("junit.xml"));
    let failed: Vec<&Case> = cases.iter().filter(|c| c.failure.is_some()).collect();
    let names: Vec<(&str, &str)> = failed
        .iter()
        .map(|c| (c.classname.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("locklab.redis-lua-pause", "at-least-as-safe-as-model"),
            ("locklab.redis-lua-pause", "no-foreign-release"),
        ],
        "{cases:#?}"
    );
    for c in &failed {
        let text = c.failure.as_deref().unwrap_or("");
        assert!(text.contains("redis-lua-pause"), "{text}");
        assert!(text.contains("no foreign release"), "{text}");
        assert!(
            text.contains("02-redis-lua-pause/history.jsonl:"),
            "names the history lines: {text}"
        );
    }
    // Without the fault, even this lock keeps clients apart.
    assert!(cases
        .iter()
        .filter(|c| c.classname == "locklab.redis-lua")
        .all(|c| c.failure.is_none() && c.error.is_none()));
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("locklab-gate.toml");
    std::fs::write(&path, text).expect("writes the config");
    path
}

/// A bad config is exit 2 with the file, the line and the key, and nothing runs.
#[test]
fn a_bad_config_is_exit_2_naming_its_line_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "client = [\"/bin/sh\"]\n\n[[scenario]]\nid = \"redis-lau\"\nrequire = [\"agrees-with-model\"]\n",
            ":4: scenario.id:",
        ),
        (
            "client = [\"/bin/sh\"]\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"mutual-exclusion\", \"liveliness\"]\n",
            ":4:",
        ),
        (
            "client = [\"./missing-client.py\"]\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n",
            ":1: client:",
        ),
        (
            "client = [\"/bin/sh\"]\n[options]\ncheck_timeout = 0\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n",
            ":3:",
        ),
    ];
    for (text, want) in cases {
        let config = write_config(dir.path(), text);
        let out = dir.path().join("out");
        let o = gate(&[config.as_os_str(), "--out".as_ref(), out.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}\n{err}");
        assert!(
            err.contains("locklab-gate.toml") && err.contains(want),
            "{want} in {err}"
        );
        assert!(!out.exists(), "nothing ran: {}", out.display());
    }
    let o = gate(&[
        "/nonexistent/locklab-gate.toml".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON error document");
    assert_eq!(json["verdict"], "error");
}
