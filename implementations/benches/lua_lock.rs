//! Acquire+release pairs per second of the `redis-lua` lock, 1 task and 16 tasks on one
//! key, next to the `redis-benchmark` SET+DEL ceiling measured on the same server in the
//! same run. `cargo bench -p locklab-implementations --features backends`.
//!
//! The ceiling is the rate of SET-then-DEL pairs redis-benchmark reaches with the same
//! number of clients, 1 / (1/SET + 1/DEL). One task pays two round trips per pair
//! (`SET NX PX`, then compare-and-delete). 16 tasks on one key are serialised by the
//! lock: without the local hand-off each hand-over costs at least one round trip (the
//! woken waiter's `SET NX` travels right behind the release), so the rate cannot beat
//! `redis-benchmark -c 1`; with it, a hand-over is one compare-and-transfer whose reply
//! nobody waits for before the next critical section, so the rate is bounded by CPU, not
//! latency. Every counted pair is one the server confirmed: a release counts only when
//! its compare-and-delete or compare-and-transfer answered 1. The last line, one key per
//! task, shows the client when the key does not serialise it.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::redis::{LuaLock, NodeOptions, RedisNode};
use locklab_implementations::{DistributedLock, Lease};
use locklab_servers::{RedisServer, Server};

#[path = "common/pairs.rs"]
mod pairs;

const RUN: Duration = Duration::from_secs(3);
const LEASE: Lease = Lease::Fixed(Duration::from_secs(10));

/// Requests per second of one redis-benchmark run (`-t set`, or a custom command).
fn rps(port: u16, clients: usize, what: &[&str]) -> Result<f64, String> {
    let out = Command::new("redis-benchmark")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-n",
            "100000",
            "-c",
            &clients.to_string(),
            "-q",
        ])
        .args(what)
        .output()
        .map_err(|e| format!("redis-benchmark: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(['\r', '\n'])
        .filter(|l| l.contains("requests per second"))
        .filter_map(|l| l.rsplit_once(": ").map(|(_, r)| r))
        .filter_map(|r| r.split_whitespace().next())
        .filter_map(|n| n.parse::<f64>().ok())
        .next_back()
        .ok_or(format!("no rate in: {text}"))
}

/// SET and DEL rates with `clients` connections (redis-benchmark has no built-in DEL
/// test, so DEL runs as a custom command).
fn redis_benchmark(port: u16, clients: usize) -> Result<(f64, f64), String> {
    Ok((
        rps(port, clients, &["-t", "set"])?,
        rps(port, clients, &["DEL", "bench-ceiling"])?,
    ))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn lock_pairs(node: &RedisNode, tasks: usize, keys: usize, handoff: bool) -> f64 {
    let locks = (0..tasks)
        .map(|t| {
            let lock = LuaLock::new(node, &format!("bench-lock-{}", t % keys));
            let lock = if handoff { lock.with_handoff() } else { lock };
            Arc::new(lock) as Arc<dyn DistributedLock>
        })
        .collect();
    pairs::lock_pairs(locks, RUN, Duration::from_secs(5), LEASE).await
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = RedisServer::start()?;
    // Default: a 2-worker runtime, as the harness uses. BENCH_RT=current: one thread,
    // where the lock tasks and redis-rs's connection task never wake each other across
    // threads (about the same on one key, half the rate on 16 keys).
    let multi = !std::env::var("BENCH_RT").is_ok_and(|v| v == "current");
    let rt = if multi {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    };
    println!(
        "runtime: {}",
        if multi {
            "multi-thread, 2 workers"
        } else {
            "current-thread"
        }
    );
    let node = rt.block_on(RedisNode::connect(&server.addr(), NodeOptions::default()))?;
    println!(
        "{:<30} {:>10} {:>10} {:>10} {:>8}",
        "median of 3 rounds", "SET/s", "DEL/s", "pairs/s", "vs ceil"
    );
    for tasks in [1usize, 16] {
        let mut ceilings = Vec::new();
        let mut rates = Vec::new();
        let mut sets = Vec::new();
        let mut dels = Vec::new();
        let mut plain = Vec::new();
        // Interleaved rounds, so a burst of load from elsewhere hits both sides alike.
        for _ in 0..3 {
            let (set, del) = redis_benchmark(server.port(), tasks)?;
            sets.push(set);
            dels.push(del);
            ceilings.push(1.0 / (1.0 / set + 1.0 / del));
            rates.push(rt.block_on(lock_pairs(&node, tasks, 1, true)));
            if tasks > 1 {
                plain.push(rt.block_on(lock_pairs(&node, tasks, 1, false)));
            }
        }
        let (ceiling, rate) = (median(&mut ceilings), median(&mut rates));
        println!(
            "{:<30} {:>10.0} {:>10.0} {:>10.0}",
            format!("redis-benchmark -c {tasks}"),
            median(&mut sets),
            median(&mut dels),
            ceiling
        );
        println!(
            "{:<30} {:>10} {:>10} {:>10.0} {:>7.0}%  ({:.0}x the 600/s Java figure)",
            format!("redis-lua, {tasks} task(s), 1 key"),
            "",
            "",
            rate,
            100.0 * rate / ceiling,
            rate / 600.0
        );
        if !plain.is_empty() {
            let rate = median(&mut plain);
            println!(
                "{:<30} {:>10} {:>10} {:>10.0} {:>7.0}%  ({:.0}x the 600/s Java figure)",
                "  without local hand-off",
                "",
                "",
                rate,
                100.0 * rate / ceiling,
                rate / 600.0
            );
        }
    }
    // What the client reaches when the key does not serialise the tasks: one key per
    // task, the same 16-way concurrency redis-benchmark uses.
    let (set, del) = redis_benchmark(server.port(), 16)?;
    let ceiling = 1.0 / (1.0 / set + 1.0 / del);
    let rate = rt.block_on(lock_pairs(&node, 16, 16, true));
    println!(
        "{:<30} {:>10} {:>10} {:>10.0} {:>7.0}%  (ceiling {:.0} in this round)",
        "redis-lua, 16 tasks, 16 keys",
        "",
        "",
        rate,
        100.0 * rate / ceiling,
        ceiling
    );
    Ok(())
}
