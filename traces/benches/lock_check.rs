//! Check time and peak memory of lock histories against their length (the curve of
//! docs/benchmarks.md): clients 2…64, run length 10…900 s (about 5k to 6M events),
//! without faults and with the holder pausing past its lease; porcupine-rs on the same
//! histories' counter operations beside.
//!
//! `cargo bench -p locklab-traces --bench lock_check` (`QUICK=1`: clients 2 and 16, 10
//! and 60 s only; `PLOT=DIR`: also write `history-check-time.svg` and
//! `history-check-memory.svg` there). Each history is written by a child process and
//! checked by another, so that a check's peak resident memory (VmHWM) is its own and not
//! the simulation's; porcupine-rs runs in a third, under a 4 GB address-space limit and
//! a 30 s timeout (its figures are its bare check's: the history is read for it by
//! locklab's reader beforehand, outside the timing). Each child prints one JSON line; the parent, a Markdown table.
//!
//! The histories come from a simulated lock service with the shape `locklab run` records
//! on real Redis: every client polls with `SET NX`-like tries (one round trip each,
//! recorded one by one), enters, reads and writes the counter, leaves and releases; the
//! fault makes one holder in eight stall past its lease, so that two clients overlap.
//! The real run of `locklab run redis-lua --clients 64 --duration 30` recorded 114,850
//! events; the simulated one has the same order of magnitude. Simulated rather than recorded so that a 120 s, 64-client history takes no server
//! and no two minutes to make, and the same seed gives the same history.

use locklab_traces::format::Backend;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::time::Instant;

use locklab_traces::check::{check_history, Options};
use locklab_traces::format::{Event, Header, OpKind, Phase, Process, ResourceSpec};
use locklab_traces::import::read_any;
use locklab_traces::ops::{pair, Outcome};
use locklab_traces::plot::{figure, Axes, Panel, Series};
use locklab_traces::writer::HistoryWriter;
use porcupine_rs::{Model, Operation};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// A deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// What a simulated client does next, at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Try,
    Granted,
    Busy,
    Write,
    Release,
    Released,
}

fn simulate(clients: u32, seconds: u64, fault: bool, seed: u64) -> Vec<Event> {
    let rtt = 200 * US;
    let lease = 500 * MS;
    let work = 5 * MS;
    let end = seconds * 1000 * MS;
    let mut rng = Rng(seed | 1);
    let mut events = Vec::new();
    // The service: (holder, lease deadline); the counter.
    let mut holder: Option<(u32, u64)> = None;
    let mut counter = 0i64;
    let mut read: Vec<i64> = vec![0; clients as usize];
    // Busy answers in a row, per client: the back-off grows with them, as in
    // `locklab_implementations::retry` (100 µs doubling, capped at 50 ms, jittered).
    let mut tries: Vec<u32> = vec![0; clients as usize];
    let mut queue: BinaryHeap<Reverse<(u64, u32, Step)>> = BinaryHeap::new();
    for c in 0..clients {
        queue.push(Reverse((rng.below(MS), c, Step::Try)));
    }
    let ev =
        |p: u32, op: OpKind, phase: Phase, t: u64| Event::new(Process::Client(p), op, phase, t);
    while let Some(Reverse((t, c, step))) = queue.pop() {
        match step {
            Step::Try if t < end => {
                let mut e = ev(c, OpKind::Acquire, Phase::Invoke, t);
                e.key = Some("lock".into());
                e.lease_ns = Some(lease);
                events.push(e);
                let at = t + rtt / 2;
                let free = holder.is_none_or(|(_, d)| at >= d);
                if free {
                    holder = Some((c, at + lease));
                }
                let next = if free { Step::Granted } else { Step::Busy };
                queue.push(Reverse((t + rtt, c, next)));
            }
            Step::Try => {}
            Step::Busy => {
                let mut e = ev(c, OpKind::Acquire, Phase::Fail, t);
                e.key = Some("lock".into());
                events.push(e);
                let n = &mut tries[c as usize];
                *n = n.saturating_add(1);
                let cap = (50 * MS).min((100 * US) << (*n).min(9));
                queue.push(Reverse((
                    t + cap / 2 + rng.below(cap / 2 + 1),
                    c,
                    Step::Try,
                )));
            }
            Step::Granted => {
                tries[c as usize] = 0;
                let mut e = ev(c, OpKind::Acquire, Phase::Ok, t);
                e.key = Some("lock".into());
                events.push(e);
                events.push(ev(c, OpKind::Enter, Phase::Ok, t + US));
                let mut r = ev(c, OpKind::Read, Phase::Invoke, t + 2 * US);
                r.key = Some("counter".into());
                events.push(r);
                read[c as usize] = counter;
                let mut r = ev(c, OpKind::Read, Phase::Ok, t + 2 * US + rtt);
                r.key = Some("counter".into());
                r.value = Some(counter.into());
                events.push(r);
                let stall = if fault && rng.below(8) == 0 {
                    2 * lease
                } else {
                    0
                };
                queue.push(Reverse((t + 2 * US + rtt + work + stall, c, Step::Write)));
            }
            Step::Write => {
                let v = read[c as usize] + 1;
                let mut w = ev(c, OpKind::Write, Phase::Invoke, t);
                w.key = Some("counter".into());
                w.value = Some(v.into());
                events.push(w);
                counter = v;
                let mut w = ev(c, OpKind::Write, Phase::Ok, t + rtt);
                w.key = Some("counter".into());
                events.push(w);
                events.push(ev(c, OpKind::Leave, Phase::Ok, t + rtt + US));
                queue.push(Reverse((t + rtt + 2 * US, c, Step::Release)));
            }
            Step::Release => {
                let mut e = ev(c, OpKind::Release, Phase::Invoke, t);
                e.key = Some("lock".into());
                events.push(e);
                let at = t + rtt / 2;
                let mine = holder.is_some_and(|(h, d)| h == c && at < d);
                if mine {
                    holder = None;
                }
                let mut e = ev(
                    c,
                    OpKind::Release,
                    if mine { Phase::Ok } else { Phase::Fail },
                    t + rtt,
                );
                e.key = Some("lock".into());
                events.push(e);
                queue.push(Reverse((t + rtt + rng.below(2 * MS), c, Step::Released)));
            }
            Step::Released => queue.push(Reverse((t, c, Step::Try))),
        }
    }
    events.sort_by_key(|e| e.time);
    events
}

/// Peak resident memory of this process, in bytes.
fn peak_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Child: simulate one case and write its history to `path`.
fn write(clients: u32, seconds: u64, fault: bool, path: &str) -> Result<String, String> {
    let events = simulate(
        clients,
        seconds,
        fault,
        0x5eed ^ u64::from(clients) ^ seconds,
    );
    let mut header = Header::new("bench", Backend::Simulated);
    header.resource = Some(ResourceSpec::Counter { initial: 0 });
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let writer =
        HistoryWriter::new(std::io::BufWriter::new(file), &header).map_err(|e| e.to_string())?;
    for e in &events {
        writer.record(e).map_err(|e| e.to_string())?;
    }
    writer.into_inner().flush().map_err(|e| e.to_string())?;
    Ok(format!("{{\"events\":{}}}", events.len()))
}

/// Child: read and check the history at `path` as `check-history` does.
fn check(path: &str) -> Result<String, String> {
    let start = Instant::now();
    let history = read_any(std::path::Path::new(path), None).map_err(|e| e.to_string())?;
    let options = Options {
        timeout: Some(std::time::Duration::from_secs(60)),
        memory: Some(1 << 30),
        ..Options::default()
    };
    let report = check_history(&history, &options).map_err(|e| e.to_string())?;
    Ok(format!(
        "{{\"verdict\":\"{:?}\",\"secs\":{:.3},\"peak_mb\":{:.1}}}",
        report.verdict,
        start.elapsed().as_secs_f64(),
        peak_bytes() as f64 / 1e6
    ))
}

/// The counter as porcupine-rs's register: the bare model its own tests use.
#[derive(Clone)]
struct Register;

#[derive(Clone, Debug)]
enum RegisterOp {
    Read(i64),
    Write(i64),
}

impl Model for Register {
    type State = i64;
    type Op = RegisterOp;
    type Metadata = ();
    fn init() -> i64 {
        0
    }
    fn step(s: &i64, op: &RegisterOp) -> (bool, i64) {
        match op {
            RegisterOp::Read(v) => (v == s, *s),
            RegisterOp::Write(v) => (true, *v),
        }
    }
}

/// Child: porcupine-rs on the history's counter reads and writes, its check alone:
/// neither the time nor the peak counts reading the file, which locklab's reader does.
fn porcupine(path: &str) -> Result<String, String> {
    let history = read_any(std::path::Path::new(path), None).map_err(|e| e.to_string())?;
    let paired = pair(&history).map_err(|e| e.to_string())?;
    let int = |v: Option<serde_json::Value>| v.and_then(|v| v.as_i64()).unwrap_or(0);
    let ops: Vec<Operation<Register>> = paired
        .ops
        .iter()
        // porcupine-rs panics on a call without a return: the simulation has none, and
        // a failed operation did nothing.
        .filter(|o| o.outcome == Outcome::Ok)
        .filter_map(|o| {
            let op = match o.kind {
                OpKind::Read => RegisterOp::Read(int(o.result_value())),
                OpKind::Write => RegisterOp::Write(int(o.invoke.1.value_json())),
                _ => return None,
            };
            Some(Operation {
                client_id: Some(o.process),
                call_time: o.invoke.1.time as i64,
                return_time: o.ret().map_or(i64::MAX, |r| r as i64),
                op,
                metadata: None,
            })
        })
        .collect();
    drop(paired);
    drop(history);
    // The figures are the check's own: the peak so far was locklab's reader, so the
    // high-water mark starts again here (Linux: 5 to clear_refs resets VmHWM).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let start = Instant::now();
    let limit = std::time::Duration::from_secs(30);
    let verdict = porcupine_rs::check_operations_timeout(&ops, limit);
    // porcupine-rs 0.3 answers Illegal when its timeout fires: only the clock tells.
    let verdict = if start.elapsed() >= limit {
        "Unknown".to_string()
    } else {
        format!("{verdict:?}")
    };
    Ok(format!(
        "{{\"verdict\":\"{verdict}\",\"ops\":{},\"secs\":{:.3},\"peak_mb\":{:.1}}}",
        ops.len(),
        start.elapsed().as_secs_f64(),
        peak_bytes() as f64 / 1e6
    ))
}

/// Runs this executable as a child in `mode` on `arg`, under `limit_kb` of address
/// space if given, and reads its JSON line.
fn child(mode: &str, arg: &str, limit_kb: Option<u64>) -> serde_json::Value {
    let Ok(me) = std::env::current_exe() else {
        return serde_json::json!({"failed": "cannot find this benchmark's own executable"});
    };
    let mut cmd = match limit_kb {
        Some(kb) => {
            let mut c = std::process::Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -v {kb} && exec \"$0\"",))
                .arg(&me);
            c
        }
        None => std::process::Command::new(&me),
    };
    match cmd
        .env("LOCK_CHECK_MODE", mode)
        .env("LOCK_CHECK_ARG", arg)
        .output()
    {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| serde_json::json!({ "failed": e.to_string() })),
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            let why = if why.contains("memory allocation") {
                "out of memory".to_string()
            } else {
                why.lines().last().unwrap_or("killed").to_string()
            };
            serde_json::json!({ "failed": why })
        }
        Err(e) => serde_json::json!({ "failed": e.to_string() }),
    }
}

fn run_child(mode: &str, arg: &str) -> Result<String, String> {
    if mode == "check" {
        return check(arg);
    }
    if mode == "porcupine" {
        return porcupine(arg);
    }
    let parts: Vec<&str> = arg.split(',').collect();
    let parsed = (
        parts.first().and_then(|s| s.parse().ok()),
        parts.get(1).and_then(|s| s.parse().ok()),
        parts.get(2).map(|s| *s == "fault"),
        parts.get(3),
    );
    let (Some(c), Some(s), Some(f), Some(path)) = parsed else {
        return Err(format!("bad LOCK_CHECK_ARG {arg:?}"));
    };
    write(c, s, f, path)
}

/// One measured case of the curve.
struct Row {
    clients: u32,
    seconds: u64,
    fault: bool,
    events: f64,
    locklab: serde_json::Value,
    porcupine: serde_json::Value,
}

fn cell(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(serde_json::Value::as_f64)
        .map_or("—".to_string(), |x| format!("{x}"))
}

fn plots(rows: &[Row], dir: &str) -> std::io::Result<()> {
    let series =
        |name: &str, fault: bool, side: fn(&Row) -> &serde_json::Value, key: &str| Series {
            name: name.to_string(),
            points: rows
                .iter()
                .filter(|r| r.fault == fault && r.clients == 64)
                .filter_map(|r| {
                    side(r)
                        .get(key)
                        .and_then(serde_json::Value::as_f64)
                        .map(|y| (r.events, y))
                })
                .collect(),
        };
    // Where porcupine-rs ran out of memory, its legend says at which history.
    let porcupine_name = |fault: bool| {
        let failed = rows
            .iter()
            .find(|r| r.fault == fault && r.clients == 64 && r.porcupine.get("failed").is_some());
        match failed {
            Some(r) => format!("porcupine-rs: out of 4 GB at {:.1}M", r.events / 1e6),
            None => "porcupine-rs (counter ops only)".to_string(),
        }
    };
    let panels = |key: &str| {
        [
            (false, "no fault"),
            (true, "a holder pauses past its lease"),
        ]
        .into_iter()
        .map(|(fault, title)| Panel {
            title: format!("{title} (64 clients)"),
            series: vec![
                series(
                    "locklab check-history (read + check)",
                    fault,
                    |r| &r.locklab,
                    key,
                ),
                series(&porcupine_name(fault), fault, |r| &r.porcupine, key),
            ],
        })
        .collect::<Vec<_>>()
    };
    let axes = |y: &str| Axes {
        x: "events in the history".to_string(),
        y: y.to_string(),
        log_x: true,
        log_y: true,
    };
    let dir = std::path::Path::new(dir);
    std::fs::write(
        dir.join("history-check-time.svg"),
        figure(
            "Checking a lock history: time",
            &axes("seconds"),
            &panels("secs"),
        ),
    )?;
    std::fs::write(
        dir.join("history-check-memory.svg"),
        figure(
            "Checking a lock history: peak memory",
            &axes("peak resident MB"),
            &panels("peak_mb"),
        ),
    )
}

fn main() {
    if let (Ok(mode), Ok(arg)) = (
        std::env::var("LOCK_CHECK_MODE"),
        std::env::var("LOCK_CHECK_ARG"),
    ) {
        match run_child(&mode, &arg) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let quick = std::env::var_os("QUICK").is_some();
    let clients: &[u32] = if quick { &[2, 16] } else { &[2, 8, 16, 64] };
    let seconds: &[u64] = if quick {
        &[10, 60]
    } else {
        &[10, 60, 300, 900]
    };
    let dir = std::env::temp_dir();
    let mut rows = Vec::new();
    println!("| clients | seconds | fault | events | locklab verdict | locklab s | locklab MB | porcupine-rs ops | porcupine-rs verdict | porcupine-rs s | porcupine-rs MB |");
    println!("|---:|---:|---|---:|---|---:|---:|---:|---|---:|---:|");
    for &fault in &[false, true] {
        // Past a case porcupine-rs could not finish, the longer ones of the same
        // clients are not tried: each would only spend its timeout.
        let mut gave_up: Vec<u32> = Vec::new();
        for &c in clients {
            for &s in seconds {
                let kind = if fault { "fault" } else { "none" };
                let path = dir.join(format!(
                    "locklab-curve-{}-{c}-{s}-{kind}.jsonl",
                    std::process::id()
                ));
                let path = path.display().to_string();
                let written = child("write", &format!("{c},{s},{kind},{path}"), None);
                let locklab = child("check", &path, None);
                let porcupine = if gave_up.contains(&c) {
                    serde_json::json!({})
                } else {
                    child("porcupine", &path, Some(4_000_000))
                };
                if porcupine.get("failed").is_some()
                    || porcupine.get("verdict").and_then(serde_json::Value::as_str)
                        == Some("Unknown")
                {
                    gave_up.push(c);
                }
                let _ = std::fs::remove_file(&path);
                let row = Row {
                    clients: c,
                    seconds: s,
                    fault,
                    events: written
                        .get("events")
                        .and_then(serde_json::Value::as_f64)
                        .unwrap_or(0.0),
                    locklab,
                    porcupine,
                };
                let word = |v: &serde_json::Value| match v.get("verdict") {
                    Some(w) => w.as_str().unwrap_or("?").to_string(),
                    None => match v.get("failed").and_then(serde_json::Value::as_str) {
                        Some("out of memory") => "out of memory (4 GB)".to_string(),
                        Some(_) => "failed".to_string(),
                        None => "not tried".to_string(),
                    },
                };
                println!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    row.clients,
                    row.seconds,
                    if fault { "pause" } else { "none" },
                    row.events,
                    word(&row.locklab),
                    cell(&row.locklab, "secs"),
                    cell(&row.locklab, "peak_mb"),
                    cell(&row.porcupine, "ops"),
                    word(&row.porcupine),
                    cell(&row.porcupine, "secs"),
                    cell(&row.porcupine, "peak_mb"),
                );
                rows.push(row);
            }
        }
    }
    if let Ok(dir) = std::env::var("PLOT") {
        if let Err(e) = plots(&rows, &dir) {
            eprintln!("cannot write the plots in {dir}: {e}");
            std::process::exit(1);
        }
    }
}
