//! Every Porcupine history vendored in `tests/data/porcupine` reaches exactly the
//! verdict the Go checker gives it (expected.csv).

use std::path::PathBuf;

use locklab_traces::check::{check_history, Options, Verdict};
use locklab_traces::import::{read_any, InputFormat};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine")
}

#[test]
fn every_porcupine_history_gets_its_expected_verdict() {
    let dir = data_dir();
    let csv = std::fs::read_to_string(dir.join("expected.csv"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut checked = 0;
    let mut wrong = Vec::new();
    for line in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let (file, expected) = line.split_once(',').expect("file,verdict");
        let format = if file.starts_with("etcd/") {
            InputFormat::PorcupineEtcd
        } else {
            InputFormat::PorcupineKv
        };
        let history = read_any(&dir.join(file), Some(format)).unwrap_or_else(|e| panic!("{e}"));
        let report = check_history(&history, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let want = match expected {
            "linearizable" => Verdict::Ok,
            "not-linearizable" => Verdict::Violation,
            other => panic!("unknown expected verdict {other}"),
        };
        if report.verdict != want {
            wrong.push(format!(
                "{file}: expected {want:?}, got {:?}",
                report.verdict
            ));
        }
        checked += 1;
    }
    assert_eq!(checked, 109, "expected.csv lists 109 histories");
    assert!(wrong.is_empty(), "{wrong:#?}");
}
