//! A build without any family (the default): `run`, `gate` and `bench` are
//! listed in `--help` and, asked for, say which feature builds them — exit 4 (could not
//! run: the command line may well be right), JSON on request — while the model and
//! history commands work.
#![cfg(not(feature = "harness"))]

use crate::common::cli;
use cli::{assert_exit, assert_says, json_after, locklab, stderr, stdout};

#[test]
fn run_gate_and_bench_name_the_feature_that_builds_them() {
    let help = stdout(&locklab(&["--help"]));
    for (command, feature) in [("run", "run"), ("gate", "run"), ("bench", "sql")] {
        assert_says(&help, &format!("  {command} "));
        let o = locklab(&[command, "redis-failover", "--seed", "1"]);
        assert_exit(&o, 4);
        assert_says(&stderr(&o), &format!("`locklab {command}`"));
        assert_says(&stderr(&o), &format!("--features {feature}"));
        let doc = json_after(&locklab(&[command, "--format", "json"]), 4);
        assert_eq!(doc["error_kind"], "environment");
    }
}

#[test]
fn the_default_build_explains_the_failover_story() {
    let o = locklab(&["explain", "redis-failover"]);
    assert_exit(&o, 1);
    assert_says(&stdout(&o), "failover");
}
