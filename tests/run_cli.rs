//! `locklab run` usage errors: exit 2 with a message naming the problem, before any
//! server starts (so these need no server); a server that is not there is exit 4
//! (could not run), and every exit code is in `--help`.
#![cfg(feature = "run")]

use std::process::Command;

use crate::common::cli;
use crate::common::schema;
use cli::{locklab, stderr, stdout};
use schema::assert_document;

#[test]
fn an_unknown_id_names_the_ids_that_run() {
    let out = locklab(&["run", "redis-failovr"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("redis-failovr") && err.contains("redis-failover"),
        "{err}"
    );
}

#[test]
fn bad_options_exit_2_naming_the_flag() {
    let out = locklab(&["run", "redis-lua", "--clients", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--clients"));
    let out = locklab(&["run", "redis-lua", "--duration=-3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--duration"));
    let out = locklab(&["run", "redis-lua", "--replicas", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--replicas"));
    // A random nemesis: a bad spec, a kind the row's model lacks, a run too short for
    // one fault, a shrink budget without a nemesis, a row without a lock.
    for (args, says) in [
        (&["--nemesis", "chaos"][..], "--nemesis"),
        (&["--nemesis", "random:partition"][..], "no partition fault"),
        (&["--nemesis", "random", "--duration", "2"][..], "too short"),
        (&["--shrink-runs", "3"][..], "--nemesis"),
    ] {
        let out = locklab(&[&["run", "redis-lua"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    // A server fault the row's model knows but its servers cannot take: PostgreSQL's
    // clock is not faked.
    let out = locklab(&["run", "pg-advisory", "--nemesis", "random:jump"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot take a jump"),
        "{}",
        stderr(&out)
    );
    let out = locklab(&["run", "inventory-no-lock", "--nemesis", "random"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--nemesis"), "{}", stderr(&out));
    let out = locklab(&["run", "redis-lua", "--format", "json", "--clients", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("a JSON error document");
    assert_eq!(json["verdict"], "error");
    assert_document("error", &json, &["run", "redis-lua", "--clients", "0"]);
}

#[test]
fn list_shows_every_runnable_scenario() {
    let out = locklab(&["run", "--list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_document("run-list", &json, &["run", "--list"]);
    let ids: Vec<&str> = json["scenarios"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    for id in [
        "redis-lua",
        "redis-lua-pause",
        "redis-lua-fenced",
        "redis-del-unconditional",
        "redis-failover",
        "redis-failover-wait",
        "redlock",
        "redlock-restart",
        "etcd-lease-pause",
        "etcd-txn-guarded",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
}

/// A row whose fault cuts servers apart cannot run without hosts of their own: asked to
/// stay on loopback, or run without root (no network namespaces), it says why and
/// could not run (exit 4) — it never runs without its cut. `--net` names its values.
#[test]
fn a_row_that_cuts_servers_apart_says_it_cannot_run_without_hosts() {
    let out = locklab(&["run", "redis-lua", "--net", "lan"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--net") && stderr(&out).contains("loopback"),
        "{}",
        stderr(&out)
    );
    let loopback = locklab(&[
        "run",
        "redis-split-brain",
        "--net",
        "loopback",
        "--format",
        "json",
    ]);
    // uid 65534 (nobody): no CAP_NET_ADMIN, so `auto` finds no namespaces to make.
    let unprivileged = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_locklab"))
        .args(["run", "redis-split-brain", "--format", "json"])
        .output()
        .expect("setpriv (util-linux) runs locklab as nobody");
    for (out, says) in [(loopback, "--net loopback"), (unprivileged, "need root")] {
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("a JSON error document");
        assert_eq!(json["error_kind"], "environment");
        let error = json["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("a split brain needs each server on a host of its own")
                && error.contains(says),
            "{error}"
        );
    }
}

#[test]
fn sql_runs_refuse_bad_options_and_a_missing_server_before_starting_anything() {
    for id in ["mysql-getlock-conn-kill", "pg-advisory-xact"] {
        let out = locklab(&["run", id, "--clients", "0"]);
        assert_eq!(out.status.code(), Some(2), "{id}");
        assert!(stderr(&out).contains("--clients"), "{id}");
    }
    // No MariaDB on PATH: the run could not run (exit 4, not a usage error), the
    // message naming what to install.
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["run", "mysql-getlock-conn-kill", "--format", "json"])
        .env("PATH", "/nonexistent")
        .output()
        .expect("runs locklab");
    assert_eq!(out.status.code(), Some(4));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("a JSON error document");
    assert_eq!(json["verdict"], "error");
    assert_eq!(json["error_kind"], "environment");
    let error = json["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("mariadb") && error.contains("ci/setup.sh"),
        "{error}"
    );
}

#[test]
fn inventory_runs_and_the_bench_refuse_bad_options_before_starting_anything() {
    let out = locklab(&["run", "inventory-one-sql", "--backend", "oracle"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--backend"));
    let out = locklab(&["run", "inventory-one-sql", "--clients", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let out = locklab(&["run", "redis-lua", "--backend", "postgres"]);
    assert_eq!(out.status.code(), Some(2));
    let out = locklab(&["bench", "nothing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("inventory"));
    let out = locklab(&["bench", "inventory", "--buyers", "0", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("a JSON error document");
    assert_eq!(json["verdict"], "error");
    let out = locklab(&["bench", "inventory", "--backend", "oracle"]);
    assert_eq!(out.status.code(), Some(2));
    for (args, flag) in [
        (&["--sweep", "0,4"][..], "--sweep"),
        (&["--sweep", "1,x"][..], "--sweep"),
        (&["--seeds", "--plot", "p.svg"][..], "--plot"),
        (&["--sweep", "--plot", "/no/such/dir/p.svg"][..], "--plot"),
        (&["--pool", "0"][..], "--pool"),
        (&["--retry-pause", "11"][..], "--retry-pause"),
    ] {
        let out = locklab(&[&["bench", "inventory"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
    let out = locklab(&["run", "--list"]);
    let list = stdout(&out);
    for id in [
        "inventory-no-lock",
        "inventory-local-mutex",
        "inventory-one-sql",
        "inventory-optimistic",
        "inventory-timestamp-cas",
        "inventory-phantom-no-lock",
        "inventory-phantom-one-sql",
    ] {
        assert!(list.contains(id), "{id} missing from run --list");
    }
}

/// `--client`: a program that is not there, an inventory row (buyers, no lock) and a
/// client timeout without a client are usage errors, before any server starts.
#[test]
fn run_client_usage_errors_exit_2_naming_the_flag() {
    let out = locklab(&["run", "redis-lua", "--client", "./no-such-client", "--flag"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--client") && err.contains("no-such-client"),
        "{err}"
    );
    let out = locklab(&["run", "inventory-no-lock", "--client", "/bin/sh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("buyers"));
    let out = locklab(&["run", "redis-lua", "--client-timeout", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--client"));
    let out = locklab(&["run", "redis-lua", "--client"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Every command's `--help` lists the exit codes; a usage error asked for as JSON is
/// one JSON document with its kind.
#[test]
fn every_help_lists_the_exit_codes_and_usage_errors_come_as_json() {
    for command in [
        "check-history",
        "export",
        "models",
        "check",
        "explain",
        "explore",
        "matrix",
        "report",
        "run",
        "gate",
        "bench",
    ] {
        let out = locklab(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command}");
        let help = stdout(&out);
        for code in ["0  ", "1  ", "2  ", "3  ", "4  could not run"] {
            assert!(
                help.contains(code),
                "{command} --help lacks {code:?}:\n{help}"
            );
        }
    }
    let out = locklab(&["run", "redis-lua", "--clients", "x", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(json["verdict"], "error");
    assert_eq!(json["error_kind"], "usage");
    assert!(
        json["error"]
            .as_str()
            .is_some_and(|e| e.contains("--clients")),
        "{json}"
    );
}

/// Runs `args`, which must exit 0 with a `name` document valid against its schema.
#[cfg(feature = "backends")]
fn document(name: &str, args: &[&str]) -> serde_json::Value {
    let out = locklab(args);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_document(name, &json, args);
    json
}

/// A real run's and a real benchmark's documents validate against their schemas (the
/// usage errors above need no server; these start their own).
#[cfg(feature = "backends")]
#[test]
fn a_real_run_and_bench_print_valid_documents() {
    let args = ["run", "redis-lua", "--duration", "1", "--format", "json"];
    document("run", &args);
    let args = [
        "bench",
        "inventory",
        "--backend",
        "redis",
        "--buyers",
        "2",
        "--duration",
        "0.3",
        "--format",
        "json",
    ];
    document("bench", &args);
    // The arrivals test and a sweep in one document, the sweep drawn.
    let dir = tempfile::tempdir().expect("temp dir");
    let svg = dir.path().join("sweep.svg");
    let svg_arg = svg.to_string_lossy().into_owned();
    let args = [
        "bench",
        "inventory",
        "--backend",
        "redis",
        "--stock",
        "40",
        "--requests",
        "50",
        "--within",
        "0.1",
        "--pool",
        "2",
        "--sweep",
        "1,2",
        "--duration",
        "0.2",
        "--plot",
        &svg_arg,
        "--format",
        "json",
    ];
    let json = document("bench", &args);
    let rows = json["rows"].as_array().expect("rows");
    // Five strategies on Redis (no timestamp CAS), under three workloads.
    assert_eq!(rows.len(), 15, "{json:#}");
    assert_eq!(
        rows.iter().filter(|r| r["workload"] == "arrivals").count(),
        5
    );
    assert_eq!(json["plot"], svg_arg);
    let drawn = std::fs::read_to_string(&svg).expect("the plot is written");
    assert_eq!(drawn.matches("<polyline").count(), 5, "{drawn}");
}
