//! `locklab check-history` end to end: exit codes, errors that name file and line, the
//! timeout rule, JSON output and the HTML report's escaping.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::cli;
use cli::{assert_exit, assert_says, locklab, stderr, stdout};

/// `check-history` of `file` with `args`.
fn check_history(file: &Path, args: &[&str]) -> Output {
    let file = file.to_str().expect("utf-8 path");
    locklab(&[&["check-history", file], args].concat())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writes");
    p
}

const HEADER: &str =
    r#"{"format":"locklab-history","version":1,"protocol":"test","backend":"simulated"}"#;

/// Porcupine's histories, vendored with the history checker's tests.
fn porcupine() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/tests/data/porcupine")
}

/// Each malformed input: exit 2, an error naming file:line, never a panic.
#[test]
fn malformed_inputs_exit_2_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: &[(&str, String, &str)] = &[
        (
            "truncated.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":2}}\n"),
            ":2: truncated",
        ),
        (
            "wrong-type.jsonl",
            format!("{HEADER}\n{{\"process\":\"zero\",\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1}}\n"),
            ":2: bad event",
        ),
        (
            "unknown-op.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"frobnicate\",\"phase\":\"invoke\",\"time\":1}}\n"),
            ":2: bad event: unknown variant `frobnicate`",
        ),
        (
            "completion-without-invoke.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":1}}\n"),
            ":2: completion (ok) of acquire by c0 without an invocation",
        ),
        (
            "return-before-call.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":10}}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":5}}\n"),
            ":3: returns at 5 ns, before it was called at 10 ns (line 2)",
        ),
        ("empty.jsonl", String::new(), "empty history"),
        (
            "unknown-backend.jsonl",
            "{\"format\":\"locklab-history\",\"version\":1,\"protocol\":\"x\",\"backend\":\"mysql\"}\n".to_string(),
            ":1: bad header: unknown backend \"mysql\"; known: redis, mariadb, postgres, etcd, zookeeper, imported, simulated",
        ),
        ("no-header.jsonl", "{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1}\n".to_string(), ":1: expected a header line"),
        ("bad.edn", "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 0, :type :ok, :f :frob}\n".to_string(), ":2: unknown op :f :frob"),
        ("truncated.edn", "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 0, :type :ok,\n".to_string(), "truncated"),
        // A returned value is wrong where it is returned, not where it was asked for.
        (
            "bad-read.edn",
            "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 1, :type :invoke, :f :write, :value 1}\n{:process 1, :type :ok, :f :write, :value 1}\n{:process 0, :type :ok, :f :read, :value \"x\"}\n".to_string(),
            ":4: read needs an integer \"value\", got \"x\"",
        ),
        (
            "bad-get.txt",
            "{:process 0, :type :invoke, :f :put, :key \"0\", :value \"a\"}\n{:process 0, :type :ok, :f :put, :key \"0\", :value \"a\"}\n{:process 1, :type :invoke, :f :get, :key \"0\", :value nil}\n{:process 2, :type :invoke, :f :get, :key \"0\", :value nil}\n{:process 2, :type :ok, :f :get, :key \"0\", :value \"a\"}\n{:process 1, :type :ok, :f :get, :key \"0\", :value 5}\n".to_string(),
            ":6: get needs a string \"value\", got 5",
        ),
        (
            "bad-read.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"read\",\"phase\":\"invoke\",\"time\":1}}\n{{\"process\":1,\"op\":\"write\",\"phase\":\"invoke\",\"time\":2,\"value\":1}}\n{{\"process\":1,\"op\":\"write\",\"phase\":\"ok\",\"time\":3}}\n{{\"process\":0,\"op\":\"read\",\"phase\":\"ok\",\"time\":4,\"value\":\"x\"}}\n"),
            ":5: read needs an integer",
        ),
        // serde's own "line 1" would contradict the file's line: only its column stays.
        (
            "unknown-field.jsonl",
            format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1,\"bogus\":2}}\n"),
            ":2: bad event: unknown field `bogus`",
        ),
    ];
    for (name, text, expect) in cases {
        let file = write(dir.path(), name, text);
        let out = check_history(&file, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(*name) && err.contains(expect),
            "{name}: expected {expect:?} in {err:?}"
        );
        assert!(!err.contains("panicked"), "{name} panicked: {err}");
        assert!(
            !err.contains("at line "),
            "{name}: a second line number: {err}"
        );
    }
}

/// An input error's JSON names its file and line in fields of their own, as its text.
#[test]
fn an_input_error_names_file_and_line_in_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "bad.jsonl",
        &format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":}}\n"),
    );
    let out = check_history(&file, &["--format", "json"]);
    assert_exit(&out, 2);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    assert_eq!(v["error_kind"], "input", "{v:#}");
    assert_eq!(v["file"], file.to_str().expect("utf-8 path"), "{v:#}");
    assert_eq!(v["line"], 2, "{v:#}");
    let missing = dir.path().join("missing.jsonl");
    let out = check_history(&missing, &["--format", "json"]);
    assert_exit(&out, 2);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    assert_eq!(v["file"], missing.to_str().expect("utf-8 path"), "{v:#}");
    assert!(v.get("line").is_none(), "{v:#}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (vec!["check-history", "x", "--timeout", "soon"], "--timeout"),
        (vec!["check-history", "x", "--model", "paxos"], "--model"),
        (
            vec!["check-history", "x", "--input-format", "xml"],
            "--input-format",
        ),
        (vec!["check-history", "x", "--frobnicate"], "--frobnicate"),
    ] {
        let out = locklab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
    let out = locklab(&["check-history", "/nonexistent/history.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert_says(&stderr(&out), "/nonexistent/history.jsonl: cannot read");
}

#[test]
fn a_torn_last_line_from_a_crash_still_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!("{HEADER}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1}}\n{{\"process\":0,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":2}}\n{{\"process\":1,\"op\":\"acq");
    let file = write(dir.path(), "torn.jsonl", &text);
    let out = check_history(&file, &[]);
    assert_exit(&out, 0);
    assert_says(&stdout(&out), "last line is incomplete");
}

/// A linearizable history checked with a 1 ms timeout: Unknown (3) or Ok (0), never a
/// violation — porcupine-rs's info-with-timeout variant would say Illegal here.
#[test]
fn a_timeout_gives_unknown_never_violation() {
    let file = porcupine().join("kv/c50-ok.txt");
    for _ in 0..3 {
        let out = check_history(&file, &["--timeout", "0.001"]);
        let code = out.status.code();
        assert!(
            code == Some(3) || code == Some(0),
            "exit {code:?}: {}",
            stdout(&out)
        );
        if code == Some(3) {
            assert_says(&stdout(&out), "UNKNOWN");
        }
    }
    // With the HTML report asked for too: the info variant must not leak its Illegal.
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("r.html");
    let out = check_history(
        &file,
        &[
            "--timeout",
            "0.001",
            "--html",
            html.to_str().expect("utf-8"),
        ],
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "{}",
        stdout(&out)
    );
}

#[test]
fn verdict_exit_codes_and_json() {
    let data = porcupine();
    let ok = check_history(&data.join("etcd/etcd_002.log"), &["--format", "json"]);
    assert_eq!(ok.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(v["verdict"], "ok");
    assert_eq!(v["checks"][0]["property"], "resource-linearizability");
    let bad = check_history(&data.join("kv/c10-bad.txt"), &["--format", "json"]);
    assert_eq!(bad.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&bad.stdout).expect("json");
    assert_eq!(v["verdict"], "violation");
    assert!(v["checks"][0]["ops"][0]["line"].as_u64().is_some(), "{v}");
    let err = locklab(&["check-history", "/nonexistent", "--format", "json"]);
    assert_eq!(err.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&err.stdout).expect("json error");
    assert_eq!(v["verdict"], "error");
}

/// Text from a history must never break out of the report's script or markup.
#[test]
fn html_report_escapes_every_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let evil = "</script><img src=x onerror=alert(1)>";
    let text = format!(
        "{HEADER}\n\
         {{\"process\":0,\"op\":\"put\",\"phase\":\"invoke\",\"time\":1,\"key\":\"{k}\",\"value\":\"{k}\"}}\n\
         {{\"process\":0,\"op\":\"put\",\"phase\":\"ok\",\"time\":2,\"key\":\"{k}\"}}\n\
         {{\"process\":\"nemesis\",\"op\":\"nemesis\",\"phase\":\"info\",\"time\":3,\"value\":{{\"fault\":\"{k}\"}},\"note\":\"{k}\"}}\n\
         {{\"process\":1,\"op\":\"get\",\"phase\":\"invoke\",\"time\":4,\"key\":\"{k}\"}}\n\
         {{\"process\":1,\"op\":\"get\",\"phase\":\"ok\",\"time\":5,\"key\":\"{k}\",\"value\":\"other\"}}\n",
        k = evil.replace('"', "\\\"")
    );
    let file = write(dir.path(), "evil.jsonl", &text);
    let html = dir.path().join("report.html");
    let out = check_history(&file, &["--html", html.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("wrote ") && said.contains("report.linearizability.html"),
        "{said}"
    );
    // locklab's own page, and porcupine-rs's beside it: both escape every text.
    let ours = std::fs::read_to_string(&html).expect("report written");
    assert!(ours.contains("VIOLATION"), "the verdict is on the page");
    assert!(
        ours.contains("report.linearizability.html"),
        "it links the search's drawing"
    );
    let beside = dir.path().join("report.linearizability.html");
    let porcupine = std::fs::read_to_string(&beside).expect("the search's drawing written");
    for page in [&ours, &porcupine] {
        assert_eq!(
            page.matches("</script>").count(),
            1,
            "only the template's own </script>"
        );
        assert!(
            !page.contains("<img"),
            "markup from the history leaked into the page"
        );
        assert!(
            page.contains("\\u003cimg") || page.contains("&lt;img"),
            "the text is still shown, escaped"
        );
        assert!(page.contains("nemesis"), "nemesis events are shown");
    }
}

/// A Jepsen history of nemesis events only, or an empty one, is not bad input under
/// any model: exit 0, with a note.
#[test]
fn a_nemesis_only_edn_history_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "nemesis.edn",
        "[{:type :info, :f :start, :process :nemesis, :time 1, :value nil}\n {:type :info, :f :stop, :process :nemesis, :time 2, :value {:n1 #{:n2}}}]\n",
    );
    let out = check_history(&file, &[]);
    assert_exit(&out, 0);
    assert_says(&stdout(&out), "trivially valid");
    let empty = write(dir.path(), "empty.edn", "[]\n");
    // Knossos calls both valid whatever model it is given: so does every --model.
    for model in ["auto", "cas-register", "mutex", "lock", "kv", "fencing"] {
        for f in [&file, &empty] {
            let out = check_history(f, &["--model", model]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "--model {model} on {}: {}{}",
                f.display(),
                stdout(&out),
                stderr(&out)
            );
        }
    }
}

/// `export` writes Jepsen EDN that checks the same as the history it came from, and
/// bad input is exit 2 naming file:line.
#[test]
fn export_writes_edn_that_checks_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "{HEADER}\n\
         {{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":1,\"key\":\"lock\",\"lease_ns\":1000000000}}\n\
         {{\"process\":0,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":2,\"key\":\"lock\",\"token\":7}}\n\
         {{\"process\":1,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":3,\"key\":\"lock\",\"lease_ns\":1000000000}}\n\
         {{\"process\":1,\"op\":\"acquire\",\"phase\":\"ok\",\"time\":4,\"key\":\"lock\",\"token\":8}}\n\
         {{\"process\":\"nemesis\",\"op\":\"nemesis\",\"phase\":\"info\",\"time\":5,\"value\":{{\"fault\":\"pause\",\"target\":\"c0\"}}}}\n"
    );
    let file = write(dir.path(), "double-grant.jsonl", &text);
    let out = locklab(&["export", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let edn = stdout(&out);
    assert!(
        edn.contains("[{:type :invoke, :f :acquire, :process 0, :time 1, :key \"lock\", :lease-ns 1000000000, :index 0}"),
        "{edn}"
    );
    assert!(edn.contains(":token 7"), "{edn}");
    assert!(edn.contains(":f :pause, :process :nemesis"), "{edn}");

    let exported = dir.path().join("double-grant.edn");
    let out = locklab(&[
        "export",
        file.to_str().expect("utf-8"),
        "--to",
        "edn",
        "--output",
        exported.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["events"], 5);
    let verdict = |f: &Path| {
        let out = check_history(f, &["--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (out.status.code(), v["verdict"].clone())
    };
    assert_eq!(verdict(&file), (Some(1), serde_json::json!("violation")));
    assert_eq!(verdict(&exported), verdict(&file));

    let bad = write(
        dir.path(),
        "bad.edn",
        "[{:type :invoke, :f :read, :process 0}\n {:type :ok, :f :frob, :process 0}]\n",
    );
    for format in ["text", "json"] {
        let out = locklab(&["export", bad.to_str().expect("utf-8"), "--format", format]);
        assert_eq!(out.status.code(), Some(2));
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(said.contains("bad.edn:2: unknown op :f :frob"), "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    let out = locklab(&["export", file.to_str().expect("utf-8"), "--to", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert_says(&stderr(&out), "--to");
}

/// `check-history -` reads the history from standard input, with the same verdict as
/// from a file; a malformed piped line is named `<stdin>:LINE`.
#[test]
fn a_history_piped_in_checks_as_its_file_does() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let piped = |text: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(["check-history", "-", "--model", "register"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs locklab");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("writes");
        child.wait_with_output().expect("finishes")
    };
    let stale = format!(
        "{HEADER}\n\
         {{\"process\":0,\"op\":\"write\",\"phase\":\"invoke\",\"time\":1,\"value\":1}}\n\
         {{\"process\":0,\"op\":\"write\",\"phase\":\"ok\",\"time\":2}}\n\
         {{\"process\":1,\"op\":\"read\",\"phase\":\"invoke\",\"time\":3}}\n\
         {{\"process\":1,\"op\":\"read\",\"phase\":\"ok\",\"time\":4,\"value\":0}}\n"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "stale.jsonl", &stale);
    let from_file = check_history(&file, &["--model", "register"]);
    let from_pipe = piped(&stale);
    assert_eq!(
        from_pipe.status.code(),
        from_file.status.code(),
        "{}",
        stderr(&from_pipe)
    );
    assert_eq!(from_pipe.status.code(), Some(1), "{}", stdout(&from_pipe));
    let bad = piped(&format!("{HEADER}\nnot json\n"));
    assert_exit(&bad, 2);
    assert_says(&stderr(&bad), "<stdin>:2");
}

/// An output path that cannot be written is exit 2 before any work, naming the flag.
#[test]
fn an_unwritable_html_path_is_refused_before_the_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "h.jsonl", &format!("{HEADER}\n"));
    let nowhere = dir.path().join("no/such/dir/report.html");
    let nowhere = nowhere.to_str().expect("utf-8");
    let o = check_history(&file, &["--html", nowhere]);
    assert_exit(&o, 2);
    assert_says(&stderr(&o), "--html");
    assert_says(&stderr(&o), "there is no directory");
    let o = locklab(&["check", "redis-lua", "--html", nowhere]);
    assert_exit(&o, 2);
    assert_says(&stderr(&o), "there is no directory");
    let o = locklab(&[
        "check",
        "redis-lua",
        "--html",
        dir.path().to_str().expect("utf-8"),
    ]);
    assert_exit(&o, 2);
    assert_says(&stderr(&o), "it is a directory");
}

/// A mistyped scenario id is answered with the ids near it, and a word near none with
/// where the ids are listed, not with three unrelated ids.
#[test]
fn unknown_ids_get_near_suggestions_or_none() {
    let o = locklab(&["check", "redis-lau"]);
    assert_exit(&o, 2);
    assert_says(&stderr(&o), "did you mean redis-lua");
    let o = locklab(&["check", "nope"]);
    assert_exit(&o, 2);
    assert_says(&stderr(&o), "`locklab models` lists every id");
    assert!(!stderr(&o).contains("redlock"), "{}", stderr(&o));
}
