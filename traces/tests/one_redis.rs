//! The one-Redis finding on hand-made command histories: a single server's answers
//! linearize; a failover's (the promoted replica never got the first holder's `SET`)
//! do not, and the finding names the grant no single server could give. Neither
//! changes the verdict of the lock checks.

use locklab_traces::check::{check_history, Options, Verdict};
use locklab_traces::reader::{parse, read_path_lean};

const MS: u64 = 1_000_000;

/// A `SET lock <owner> NX PX 30000` by `client` over `[call, ret]` ms, answered `reply`.
fn set_nx(client: u32, owner: &str, call: u64, ret: u64, reply: &str) -> String {
    format!(
        r#"{{"process":{client},"op":"command","phase":"ok","time":{},"key":"lock","value":{{"node":0,"command":{{"set":{{"key":"lock","value":"{owner}","nx":true,"px":30000}}}},"reply":{reply},"return":{}}}}}"#,
        call * MS,
        ret * MS
    )
}

fn history(lines: &[String]) -> String {
    let header =
        r#"{"format":"locklab-history","version":1,"protocol":"redis-failover","backend":"redis"}"#;
    std::iter::once(header.to_string())
        .chain(lines.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn finding(text: &str) -> locklab_traces::check::Finding {
    let h = parse("hand-made", text).expect("parses");
    let report = check_history(&h, &Options::default()).expect("checks");
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), text).expect("writes");
    let lean = read_path_lean(file.path()).expect("reads");
    let mut read = check_history(&lean, &Options::default()).expect("checks");
    read.source = report.source.clone();
    let path = file.path().display().to_string();
    assert_eq!(
        serde_json::to_string(&read)
            .expect("json")
            .replace(&path, "hand-made"),
        serde_json::to_string(&report).expect("json"),
        "read lean from its file, its commands read again one at a time"
    );
    assert!(
        report.checks.is_empty(),
        "no lock operations, no lock verdict"
    );
    assert_eq!(report.verdict, Verdict::Ok);
    report
        .findings
        .into_iter()
        .next()
        .expect("a one-Redis finding")
}

#[test]
fn one_servers_answers_are_one_redis() {
    let text = history(&[
        set_nx(0, "a", 0, 1, r#""ok""#),
        set_nx(1, "b", 2, 3, r#""nil""#),
        format!(
            r#"{{"process":0,"op":"command","phase":"ok","time":{},"key":"lock","value":{{"node":0,"command":{{"eval-compare-and-delete":{{"key":"lock","value":"a"}}}},"reply":{{"integer":1}},"return":{}}}}}"#,
            4 * MS,
            5 * MS
        ),
        set_nx(1, "b", 6, 7, r#""ok""#),
    ]);
    let f = finding(&text);
    assert_eq!(f.verdict, Verdict::Ok, "{f:?}");
    assert_eq!(f.stats["commands"], 4);
}

#[test]
fn a_failover_that_forgot_a_grant_is_not_one_redis() {
    // c0 is granted at 0–1 ms with a 30 s lease; c1 is refused at 2 ms; the master dies,
    // its replica (which never got the SET) is promoted, and c1 is granted at 5 s.
    let text = history(&[
        set_nx(0, "a", 0, 1, r#""ok""#),
        set_nx(1, "b", 2, 3, r#""nil""#),
        set_nx(1, "b", 5000, 5001, r#""ok""#),
    ]);
    let f = finding(&text);
    assert_eq!(f.verdict, Verdict::Violation, "{f:?}");
    assert_eq!(f.ops.len(), 1, "{f:?}");
    assert_eq!(f.ops[0].line, 4, "the second grant: {f:?}");
    assert!(
        f.summary.contains("\"a\""),
        "names what one server holds: {}",
        f.summary
    );
    assert!(
        f.explanation
            .iter()
            .any(|l| l.contains("SET lock a NX PX 30000 -> OK")),
        "names the acknowledged write: {:#?}",
        f.explanation
    );
}
