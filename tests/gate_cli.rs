//! `locklab gate`: the example configs on real servers — redis-py's Lock (a library
//! nobody here wrote, through the external-client protocol) passes its gate on the four
//! Redis scenarios, agreeing with the models; a lock without owner check fails its
//! gate — with JUnit XML that an XML parser reads; and a bad config is exit 2 naming
//! the line and key, before any server starts.
#![cfg(feature = "run")]

#[cfg(feature = "backends")]
use crate::common::schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
#[cfg(feature = "backends")]
#[cfg(feature = "backends")]
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

/// A testcase of the JUnit document: (scenario, requirement, failure or error text).
#[cfg(feature = "backends")]
#[derive(Debug)]
struct Case {
    classname: String,
    name: String,
    failure: Option<String>,
    error: Option<String>,
    /// The testcase's own `system-out`: its summary, and what else was found.
    said: String,
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
            said: text_of("system-out").unwrap_or_default(),
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
    // A gate runs its scenarios one after another: one run's share of the machine.
    let _share = crate::common::machine::beside();
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
    schema::assert_document("gate", &json, &["gate", &config.display().to_string()]);
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
    assert_eq!(json["verdict"], "ok");
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
    // Kept if an assertion fails (its path is in the message): the histories are what
    // tell why a proof was not found.
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir")
        .keep();
    let (code, json) = run_gate(&root().join("examples/broken-del/locklab-gate.toml"), &out);
    assert_eq!(code, Some(1), "{json:#}");
    assert_eq!(json["verdict"], "violation");
    let cases = junit(&out.join("junit.xml"));
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
        "run kept in {}: {cases:#?}",
        out.display()
    );
    for c in &failed {
        let text = c.failure.as_deref().unwrap_or("");
        assert!(text.contains("redis-lua-pause"), "{text}");
        assert!(text.contains("no foreign release"), "{text}");
        assert!(
            text.contains("02-redis-lua-pause/history.jsonl:"),
            "names the history lines: {text}"
        );
        // Not the client's word: what it sent, heard on the wire by its own proxy.
        assert!(
            text.contains("proven from the Redis commands") && text.contains("DEL locklab:lock"),
            "the DEL is proven from the client's decoded traffic (run kept in {}): {text}",
            out.display()
        );
    }
    // Without the fault, even this lock keeps clients apart.
    assert!(cases
        .iter()
        .filter(|c| c.classname == "locklab.redis-lua")
        .all(|c| c.failure.is_none() && c.error.is_none()));
    let _ = std::fs::remove_dir_all(&out);
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

/// The test clients of `tests/clients/` and the example clients, by path.
#[cfg(feature = "backends")]
fn python(script: &str, args: &[&str]) -> String {
    let mut words = vec![
        "\"/usr/bin/python3\"".to_string(),
        format!("\"{}\"", root().join(script).display()),
    ];
    words.extend(args.iter().map(|a| format!("\"{a}\"")));
    format!("[{}]", words.join(", "))
}

#[cfg(feature = "backends")]
fn gate_on(dir: &Path, config: &str) -> (Option<i32>, serde_json::Value, Vec<Case>) {
    let path = write_config(dir, config);
    let out = dir.join("out");
    let (code, json) = run_gate(&path, &out);
    let cases = if out.join("junit.xml").is_file() {
        junit(&out.join("junit.xml"))
    } else {
        Vec::new()
    };
    (code, json, cases)
}

/// redis-py's Lock taking a 3 s lease of its own (and saying so: protocol v2's
/// `lease_ms`) through a 1.5 s pause keeps mutual exclusion where the model of a 0.5 s
/// lease breaks it: safer than the model. It passes `at-least-as-safe-as-model` and
/// fails `agrees-with-model`; the lock check holds each grant to the 3 s lease, so
/// nothing else is found. Without `lease_ms` the same lock is held to the lease asked
/// for, and its refusals read as "busy while free".
#[cfg(feature = "backends")]
#[test]
fn a_lock_safer_than_its_model_passes_at_least_as_safe_and_fails_agrees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = |extra: &str| {
        format!(
            "name = \"fixed lease\"\nclient = {}\n[[scenario]]\nid = \"redis-lua-pause\"\nrequire = [\"at-least-as-safe-as-model\", \"agrees-with-model\"]\n",
            python("examples/redis-py/lock_client.py", &["--lease-ms", "3000", extra].iter().copied().filter(|a| !a.is_empty()).collect::<Vec<_>>())
        )
    };
    let (code, json, cases) = gate_on(dir.path(), &config(""));
    assert_eq!(code, Some(1), "{json:#}");
    let result = |name: &str| {
        cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} in {cases:#?}"))
    };
    let safe = result("at-least-as-safe-as-model");
    assert!(safe.failure.is_none() && safe.error.is_none(), "{safe:#?}");
    let exact = result("agrees-with-model");
    let text = exact.failure.as_deref().unwrap_or("");
    assert!(
        text.contains("mutual exclusion") && text.contains("DISAGREES (safer)"),
        "{text}"
    );
    let agreement = &json["scenarios"][0]["agreement"];
    assert_eq!(agreement["at_least_as_safe"], "yes", "{agreement:#}");
    assert_eq!(agreement["exact"], "no");
    assert_eq!(
        agreement["also_found"].as_array().map(Vec::len),
        Some(0),
        "held to the 3 s lease it said it took: {agreement:#}"
    );

    let (_, json, _) = gate_on(dir.path(), &config("--unsaid"));
    let found = &json["scenarios"][0]["agreement"]["also_found"];
    assert!(
        found
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f["check"] == "lock-linearizability"
                && f["summary"]
                    .as_str()
                    .is_some_and(|s| s.contains("busy while it was free")))),
        "without lease_ms the grant is held to the 0.5 s asked for: {found:#}"
    );
}

/// A client that never gets the lock enters no critical section, and the fault that
/// waits for a holder never fires: the run tested nothing, so every requirement is
/// unknown (exit 3) with the reason in the JUnit text — never a pass.
#[cfg(feature = "backends")]
#[test]
fn a_client_that_never_gets_the_lock_is_unknown_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, json, cases) = gate_on(
        dir.path(),
        &format!(
            "client = {}\n[options]\nduration = 2.0\n[[scenario]]\nid = \"redis-lua-pause\"\nrequire = [\"at-least-as-safe-as-model\", \"mutual-exclusion\", \"no-foreign-release\"]\n",
            python("tests/clients/never_granted.py", &[])
        ),
    );
    assert_eq!(code, Some(3), "{json:#}");
    assert_eq!(json["verdict"], "unknown");
    assert_eq!(cases.len(), 3, "{cases:#?}");
    for c in &cases {
        let text = c.error.as_deref().unwrap_or("");
        assert!(
            text.contains("no client entered its critical section"),
            "{}: {text}",
            c.name
        );
        assert!(c.failure.is_none(), "{c:#?}");
    }
    let why = json["scenarios"][0]["agreement"]["unknown_because"].to_string();
    assert!(why.contains("never fired"), "{why}");
}

/// A client whose every release it reports as refused (it did release): the lock keeps
/// clients apart, as the model says, but its answers are no behaviour of a lock. That
/// violation is no property the model is compared on: the run still shows it — in the
/// verdict, the JSON and the JUnit beside the passing requirement — and
/// `no-violation` fails on it.
#[cfg(feature = "backends")]
#[test]
fn a_violation_not_compared_with_the_model_is_never_hidden() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, json, cases) = gate_on(
        dir.path(),
        &format!(
            "client = {}\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"at-least-as-safe-as-model\", \"no-violation\"]\n",
            python("tests/clients/denies_releases.py", &[])
        ),
    );
    assert_eq!(code, Some(1), "{json:#}");
    let agreement = &json["scenarios"][0]["agreement"];
    assert_eq!(agreement["exact"], "yes", "{agreement:#}");
    assert_eq!(agreement["verdict"], "violation");
    assert_eq!(agreement["also_found"][0]["check"], "lock-linearizability");
    let safe = cases
        .iter()
        .find(|c| c.name == "at-least-as-safe-as-model")
        .expect("case");
    assert!(safe.failure.is_none() && safe.error.is_none(), "{safe:#?}");
    assert!(
        safe.said.contains("also found") && safe.said.contains("lock linearizability VIOLATION"),
        "{safe:#?}"
    );
    let none = cases
        .iter()
        .find(|c| c.name == "no-violation")
        .expect("case");
    assert!(
        none.failure
            .as_deref()
            .is_some_and(|f| f.contains("lock linearizability")),
        "{none:#?}"
    );

    // `locklab run` says it in its headline and exits 1.
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args([
            "run",
            "redis-lua",
            "--duration",
            "2",
            "--client",
            "/usr/bin/python3",
        ])
        .arg(root().join("tests/clients/denies_releases.py"))
        .output()
        .expect("runs locklab");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("VIOLATION (lock linearizability: a check not compared with the model for this scenario)  —  the properties compared agree with the model"),
        "{text}"
    );
}

/// A client that dies before it answers `init`: the scenario could not run. Exit 4,
/// not 2 (the config is fine; retry the job), with the client's last words.
#[cfg(feature = "backends")]
#[test]
fn a_client_that_dies_before_init_is_exit_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, json, cases) = gate_on(
        dir.path(),
        &format!(
            "client = {}\n[[scenario]]\nid = \"redis-lua\"\n",
            python("tests/clients/dies_at_init.py", &[])
        ),
    );
    assert_eq!(code, Some(4), "{json:#}");
    assert_eq!(json["verdict"], "error");
    assert_eq!(
        json["scenarios"][0]["error_kind"], "environment",
        "{json:#}"
    );
    let text = cases[0].error.as_deref().unwrap_or("");
    assert!(
        text.contains("ended before answering init") && text.contains("cannot import"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args([
            "run",
            "redis-lua",
            "--format",
            "json",
            "--client",
            "/usr/bin/python3",
        ])
        .arg(root().join("tests/clients/dies_at_init.py"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runs locklab");
    let pid = out.id();
    let out = out.wait_with_output().expect("locklab ends");
    assert_eq!(out.status.code(), Some(4));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["error_kind"], "environment");
    // A run that could not start removes its temp dir like one that finished.
    let prefix = format!("locklab-run-{pid}-");
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .expect("temp dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Random rounds in a gate: each round its own seed, its own outcome and JUnit suite;
/// the broken DEL fails every round (no plan scripted its pause), and a round that
/// shrinks prints the smallest schedule it saw break.
#[cfg(feature = "backends")]
#[test]
fn random_rounds_each_run_with_their_own_seed_and_fail_the_broken_del() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "name = \"plain DEL\"\nclient = {}\n[options]\nduration = 12.0\n[[scenario]]\nid = \"redis-lua\"\nnemesis = \"random:pause\"\nrounds = 2\nshrink_runs = 0\nrequire = [\"at-least-as-safe-as-model\", \"no-foreign-release\"]\n",
        python("examples/broken-del/lock_client.py", &[])
    );
    let (code, json, cases) = gate_on(dir.path(), &config);
    assert_eq!(code, Some(1), "{json:#}");
    let scenarios = json["scenarios"].as_array().expect("scenarios");
    let seeds: Vec<u64> = scenarios
        .iter()
        .filter_map(|s| s["seed"].as_u64())
        .collect();
    assert_eq!(seeds, [1, 1001], "{json:#}");
    for s in scenarios {
        assert_eq!(s["nemesis"]["kinds"], serde_json::json!(["pause"]), "{s:#}");
        assert!(s["nemesis"]["broken"]
            .as_array()
            .is_some_and(|b| b.iter().any(|p| p == "no foreign release")));
    }
    let suites: Vec<&str> = cases.iter().map(|c| c.classname.as_str()).collect();
    assert!(
        suites.contains(&"locklab.redis-lua (random, seed 1)")
            && suites.contains(&"locklab.redis-lua (random, seed 1001)"),
        "{suites:?}"
    );
    assert!(
        cases
            .iter()
            .filter(|c| c.name == "no-foreign-release")
            .all(|c| c.failure.is_some()),
        "{cases:#?}"
    );
    assert!(dir.path().join("out/01-redis-lua-round2.html").is_file());
}

/// `at-least-as-fair-as-model` on two locks: redis-py's retry loop, which the model
/// says may starve a client and so has nothing to keep, passes; kazoo's Lock, whose
/// sequential nodes queue its waiters (the model says nobody starves), never fails
/// without a proven out-of-order grant — a waiter passed over more often than a queue
/// allows (kazoo's client gives up a try and asks again) is unknown, not a failure.
#[cfg(feature = "backends")]
#[test]
fn a_retry_loop_passes_fairness_and_a_long_wait_is_never_a_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "name = \"fair\"\nclient = {}\n[[scenario]]\nid = \"zk-sequential\"\nrequire = [\"at-least-as-fair-as-model\"]\n[[scenario]]\nid = \"redis-lua\"\nclient = {}\nrequire = [\"at-least-as-fair-as-model\"]\n",
        python("examples/kazoo/lock_client.py", &[]),
        python("examples/redis-py/lock_client.py", &[]),
    );
    let (code, json, cases) = gate_on(dir.path(), &config);
    assert!(matches!(code, Some(0 | 3)), "{json:#}");
    assert_eq!(cases.len(), 2, "{cases:#?}");
    // An unknown is a JUnit error, never a failure.
    assert!(cases.iter().all(|c| c.failure.is_none()), "{cases:#?}");
    let judged = |i: usize| &json["scenarios"][i]["requirements"][0];
    let queue = judged(0)["summary"].as_str().unwrap_or("");
    assert!(queue.contains("a queue allows"), "{queue}");
    assert_eq!(judged(1)["verdict"], "ok", "{:#}", judged(1));
    let retry = judged(1)["summary"].as_str().unwrap_or("");
    assert!(retry.contains("lose every race"), "{retry}");
}
