//! Check time and peak memory of lock histories against their length: clients 2…64,
//! run length 10…120 s, without faults and with the holder pausing past its lease.
//!
//! `cargo bench -p locklab-traces --bench lock_check` (`QUICK=1`: clients 2…16 and
//! 10…30 s only). Each case runs in a child process of its own, so that its peak
//! resident memory (VmHWM) is the check's alone; a case prints one JSON line, and the
//! parent a table.
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
use locklab_traces::writer::HistoryWriter;

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

/// One case, in this (child) process: write the history, then read and check it as
/// `check-history` does.
fn one(clients: u32, seconds: u64, fault: bool) -> Result<String, String> {
    let events = simulate(
        clients,
        seconds,
        fault,
        0x5eed ^ u64::from(clients) ^ seconds,
    );
    let path = std::env::temp_dir().join(format!(
        "locklab-bench-{}-{clients}-{seconds}-{fault}.jsonl",
        std::process::id()
    ));
    {
        let mut header = Header::new("bench", Backend::Simulated);
        header.resource = Some(ResourceSpec::Counter { initial: 0 });
        let file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
        let writer = HistoryWriter::new(std::io::BufWriter::new(file), &header)
            .map_err(|e| e.to_string())?;
        for e in &events {
            writer.record(e).map_err(|e| e.to_string())?;
        }
        writer.into_inner().flush().map_err(|e| e.to_string())?;
    }
    drop(events);
    let before = peak_bytes();
    let start = Instant::now();
    let history = read_any(&path, None).map_err(|e| e.to_string())?;
    let options = Options {
        timeout: Some(std::time::Duration::from_secs(60)),
        memory: Some(1 << 30),
        ..Options::default()
    };
    let report = check_history(&history, &options).map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    Ok(format!(
        "{{\"clients\":{clients},\"seconds\":{seconds},\"fault\":{fault},\"events\":{},\"verdict\":\"{:?}\",\"check_s\":{secs:.3},\"peak_mb\":{:.1},\"peak_before_check_mb\":{:.1}}}",
        history.events.len(),
        report.verdict,
        peak_bytes() as f64 / 1e6,
        before as f64 / 1e6
    ))
}

fn main() {
    if let Ok(case) = std::env::var("LOCK_CHECK_CASE") {
        let parts: Vec<&str> = case.split(',').collect();
        let parsed = (
            parts.first().and_then(|s| s.parse().ok()),
            parts.get(1).and_then(|s| s.parse().ok()),
            parts.get(2).map(|s| *s == "fault"),
        );
        let (Some(c), Some(s), Some(f)) = parsed else {
            eprintln!("bad LOCK_CHECK_CASE {case:?}");
            std::process::exit(2);
        };
        match one(c, s, f) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let quick = std::env::var_os("QUICK").is_some();
    let clients: &[u32] = if quick { &[2, 16] } else { &[2, 8, 16, 32, 64] };
    let seconds: &[u64] = if quick { &[10, 30] } else { &[10, 30, 60, 120] };
    let Ok(me) = std::env::current_exe() else {
        eprintln!("cannot find this benchmark's own executable");
        std::process::exit(1);
    };
    println!(
        "{:>7} {:>5} {:>6} {:>9} {:>10} {:>8} {:>8}",
        "clients", "secs", "fault", "events", "verdict", "check s", "peak MB"
    );
    for &fault in &[false, true] {
        for &c in clients {
            for &s in seconds {
                let kind = if fault { "fault" } else { "none" };
                let out = std::process::Command::new(&me)
                    .env("LOCK_CHECK_CASE", format!("{c},{s},{kind}"))
                    .output();
                let line = match out {
                    Ok(o) if o.status.success() => {
                        String::from_utf8_lossy(&o.stdout).trim().to_string()
                    }
                    Ok(o) => format!("failed: {}", String::from_utf8_lossy(&o.stderr).trim()),
                    Err(e) => format!("failed: {e}"),
                };
                let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                println!(
                    "{:>7} {:>5} {:>6} {:>9} {:>10} {:>8} {:>8}",
                    c,
                    s,
                    kind,
                    v["events"],
                    v["verdict"].as_str().unwrap_or("?"),
                    v["check_s"],
                    v["peak_mb"]
                );
                eprintln!("{line}");
            }
        }
    }
}
