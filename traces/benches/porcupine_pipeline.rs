//! Parse + check every Porcupine history (`tests/data/porcupine`) through locklab's
//! pipeline, next to porcupine-rs's bare check of the same operations with minimal
//! models, measured in the same run.
//!
//! `cargo bench -p locklab-traces --bench porcupine_pipeline`. Prints one JSON line per
//! round and a summary.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use locklab_traces::check::{check_history, Options};
use locklab_traces::format::OpKind;
use locklab_traces::import::{read_any, InputFormat};
use locklab_traces::ops::{pair, Outcome};
use porcupine_rs::{Model, Operation};

/// The etcd register, as bare as porcupine-rs's own test model: state = value, -1 = nil.
#[derive(Clone)]
struct Etcd;

#[derive(Clone, Debug)]
enum EtcdOp {
    Read(Option<i64>),
    Write(i64),
    Cas(i64, i64, Option<bool>),
}

impl Model for Etcd {
    type State = i64;
    type Op = EtcdOp;
    type Metadata = ();
    fn init() -> i64 {
        -1
    }
    fn step(s: &i64, op: &EtcdOp) -> (bool, i64) {
        match op {
            EtcdOp::Read(None) => (true, *s),
            EtcdOp::Read(Some(v)) => (*v == *s, *s),
            EtcdOp::Write(v) => (true, *v),
            EtcdOp::Cas(from, to, ok) => {
                let hit = *from == *s;
                (ok.is_none_or(|ok| ok == hit), if hit { *to } else { *s })
            }
        }
    }
}

/// The kv map, partitioned by key like porcupine-rs's test model.
#[derive(Clone)]
struct Kv;

#[derive(Clone, Debug)]
enum KvOp {
    Get(String, String),
    Put(String, String),
    Append(String, String),
}

impl KvOp {
    fn key(&self) -> &str {
        match self {
            KvOp::Get(k, _) | KvOp::Put(k, _) | KvOp::Append(k, _) => k,
        }
    }
}

impl Model for Kv {
    type State = String;
    type Op = KvOp;
    type Metadata = ();
    fn init() -> String {
        String::new()
    }
    fn step(s: &String, op: &KvOp) -> (bool, String) {
        match op {
            KvOp::Get(_, v) => (v == s, s.clone()),
            KvOp::Put(_, v) => (true, v.clone()),
            KvOp::Append(_, v) => (true, format!("{s}{v}")),
        }
    }
    fn partition_operations(history: &[Operation<Self>]) -> Vec<Vec<Operation<Self>>> {
        let mut by_key: HashMap<String, Vec<Operation<Self>>> = HashMap::new();
        for op in history {
            by_key
                .entry(op.op.key().to_string())
                .or_default()
                .push(op.clone());
        }
        by_key.into_values().collect()
    }
}

enum Bare {
    Etcd(Vec<Operation<Etcd>>),
    Kv(Vec<Operation<Kv>>),
}

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine")
}

fn files() -> Vec<(PathBuf, InputFormat)> {
    let dir = shared();
    let csv = std::fs::read_to_string(dir.join("expected.csv")).expect("expected.csv");
    csv.lines()
        .skip(1)
        .filter_map(|l| l.split_once(','))
        .map(|(f, _)| {
            let fmt = if f.starts_with("etcd/") {
                InputFormat::PorcupineEtcd
            } else {
                InputFormat::PorcupineKv
            };
            (dir.join(f), fmt)
        })
        .collect()
}

/// `o` as porcupine-rs takes it, asking `op`.
fn operation<M: Model>(o: &locklab_traces::ops::Operation, op: M::Op) -> Operation<M> {
    Operation {
        client_id: Some(o.process),
        call_time: o.call() as i64,
        return_time: o.ret().map_or(i64::MAX, |r| r as i64),
        op,
        metadata: None,
    }
}

/// The bare operations, built outside any timing from locklab's own parse.
fn bare(path: &std::path::Path, fmt: InputFormat) -> Bare {
    let h = read_any(path, Some(fmt)).expect("parses");
    let p = pair(&h).expect("pairs");
    let int = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_i64());
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_string();
    match fmt {
        InputFormat::PorcupineEtcd => Bare::Etcd(
            p.ops
                .iter()
                .filter(|o| !(o.outcome == Outcome::Fail && o.kind != OpKind::Cas))
                .map(|o| {
                    let arg = o.invoke.1.value_json();
                    let arg = arg.as_ref();
                    let op = match o.kind {
                        OpKind::Read if o.outcome == Outcome::Ok => {
                            EtcdOp::Read(Some(int(o.result_value().as_ref()).unwrap_or(-1)))
                        }
                        OpKind::Read => EtcdOp::Read(None),
                        OpKind::Write => EtcdOp::Write(int(arg).unwrap_or(0)),
                        _ => {
                            let a = arg.and_then(|v| v.as_array()).cloned().unwrap_or_default();
                            let ok = match o.outcome {
                                Outcome::Ok => Some(true),
                                Outcome::Fail => Some(false),
                                Outcome::Unknown => None,
                            };
                            EtcdOp::Cas(int(a.first()).unwrap_or(0), int(a.get(1)).unwrap_or(0), ok)
                        }
                    };
                    operation(o, op)
                })
                .collect(),
        ),
        _ => Bare::Kv(
            p.ops
                .iter()
                .map(|o| {
                    let key = o.key().unwrap_or("").to_string();
                    let op = match o.kind {
                        OpKind::Get => KvOp::Get(key, text(o.result_value().as_ref())),
                        OpKind::Put => KvOp::Put(key, text(o.invoke.1.value_json().as_ref())),
                        _ => KvOp::Append(key, text(o.invoke.1.value_json().as_ref())),
                    };
                    operation(o, op)
                })
                .collect(),
        ),
    }
}

fn main() {
    let mut files = files();
    // FILE=substring MODE=bare|pipeline: one side of one history, e.g. under callgrind,
    // whose instruction counts do not depend on what else the machine is doing.
    if let Ok(only) = std::env::var("FILE") {
        files.retain(|(p, _)| p.to_string_lossy().contains(&only));
        let mode = std::env::var("MODE").unwrap_or_default();
        for (path, fmt) in &files {
            if mode == "bare" {
                match bare(path, *fmt) {
                    Bare::Etcd(ops) => drop(porcupine_rs::check_operations(&ops)),
                    Bare::Kv(ops) => drop(porcupine_rs::check_operations(&ops)),
                }
            } else {
                let h = read_any(path, Some(*fmt)).expect("parses");
                check_history(&h, &Options::default()).expect("checks");
            }
        }
        return;
    }
    if std::env::var_os("PER_FILE").is_some() {
        for ((path, fmt), b) in files
            .iter()
            .zip(&files.iter().map(|(p, f)| bare(p, *f)).collect::<Vec<_>>())
        {
            let s = Instant::now();
            match b {
                Bare::Etcd(ops) => drop(porcupine_rs::check_operations(ops)),
                Bare::Kv(ops) => drop(porcupine_rs::check_operations(ops)),
            }
            let bt = s.elapsed();
            let s = Instant::now();
            let h = read_any(path, Some(*fmt)).expect("parses");
            let parse = s.elapsed();
            check_history(&h, &Options::default()).expect("checks");
            let pt = s.elapsed();
            println!(
                "{} bare {:.1} parse {:.1} pipeline {:.1}",
                path.display(),
                bt.as_secs_f64() * 1e3,
                parse.as_secs_f64() * 1e3,
                pt.as_secs_f64() * 1e3
            );
        }
        return;
    }
    let bares: Vec<Bare> = files.iter().map(|(p, f)| bare(p, *f)).collect();
    let rounds = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let mut best_pipeline = Duration::MAX;
    let mut best_bare = Duration::MAX;
    // The two sides of one round ran back to back, so their ratio suffers least from
    // this machine's swings: the median of those is the figure to quote.
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let start = Instant::now();
        for b in &bares {
            match b {
                Bare::Etcd(ops) => {
                    porcupine_rs::check_operations(ops);
                }
                Bare::Kv(ops) => {
                    porcupine_rs::check_operations(ops);
                }
            }
        }
        let bare_time = start.elapsed();

        let start = Instant::now();
        for (path, fmt) in &files {
            let h = read_any(path, Some(*fmt)).expect("parses");
            check_history(&h, &Options::default()).expect("checks");
        }
        let pipeline_time = start.elapsed();
        best_bare = best_bare.min(bare_time);
        best_pipeline = best_pipeline.min(pipeline_time);
        ratios.push(pipeline_time.as_secs_f64() / bare_time.as_secs_f64());
        println!(
            "{{\"round\":{round},\"histories\":{},\"bare_check_ms\":{:.1},\"pipeline_ms\":{:.1}}}",
            files.len(),
            bare_time.as_secs_f64() * 1e3,
            pipeline_time.as_secs_f64() * 1e3
        );
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "best of {rounds}: porcupine-rs bare check {:.1} ms; locklab parse+check {:.1} ms; ratio {:.2}; median per-round ratio {median:.3}",
        best_bare.as_secs_f64() * 1e3,
        best_pipeline.as_secs_f64() * 1e3,
        best_pipeline.as_secs_f64() / best_bare.as_secs_f64()
    );
}
