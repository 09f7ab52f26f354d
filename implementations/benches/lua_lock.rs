//! Acquire+release pairs per second of the `redis-lua` lock, 1 task and 16 tasks on one
//! key, next to the `redis-benchmark` SET+DEL ceiling measured on the same server in the
//! same run. `cargo bench -p locklab-implementations --features backends`.
//!
//! A pair is `SET k o NX PX` + `EVAL compare-and-delete`: two round trips, so the
//! ceiling is the rate of SET-then-DEL pairs redis-benchmark reaches with the same
//! number of clients, 1 / (1/SET + 1/DEL).

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::redis::{LuaLock, NodeOptions, RedisNode};
use locklab_implementations::testing::RedisServer;
use locklab_implementations::{DistributedLock, Lease};

const RUN: Duration = Duration::from_secs(3);
const LEASE: Lease = Lease::Fixed(Duration::from_secs(10));

fn redis_benchmark(port: u16, clients: usize) -> Result<(f64, f64), String> {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-n", "100000", "-c", &clients.to_string()])
        .args(["-t", "set,del", "-q"])
        .output()
        .map_err(|e| format!("redis-benchmark: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = |name: &str| -> Result<f64, String> {
        text.split(['\r', '\n'])
            .filter_map(|l| l.trim().strip_prefix(name))
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|n| n.parse::<f64>().ok())
            .last()
            .ok_or(format!("no {name} rate in: {text}"))
    };
    Ok((rate("SET:")?, rate("DEL:")?))
}

async fn lock_pairs(node: &RedisNode, tasks: usize) -> f64 {
    let pairs = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let lock = LuaLock::new(node, "bench-lock");
        let (pairs, stop) = (pairs.clone(), stop.clone());
        handles.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match lock.acquire(Duration::from_secs(5), LEASE).await {
                    Ok(g) => {
                        if g.release().await.is_ok() {
                            pairs.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) => eprintln!("acquire: {e}"),
                }
            }
        }));
    }
    let start = Instant::now();
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    let done = pairs.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.await;
    }
    done as f64 / secs
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = RedisServer::start()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let node = rt.block_on(RedisNode::connect(&server.addr(), NodeOptions::default()))?;
    println!("{:<28} {:>12} {:>12} {:>14} {:>9}", "", "SET/s", "DEL/s", "pairs/s", "vs ceil");
    for tasks in [1usize, 16] {
        let (set, del) = redis_benchmark(server.port(), tasks)?;
        let ceiling = 1.0 / (1.0 / set + 1.0 / del);
        println!("{:<28} {:>12.0} {:>12.0} {:>14.0}", format!("redis-benchmark -c {tasks}"), set, del, ceiling);
        let rate = rt.block_on(lock_pairs(&node, tasks));
        println!(
            "{:<28} {:>12} {:>12} {:>14.0} {:>8.0}%  ({:.0}x the 600/s Java figure)",
            format!("redis-lua, {tasks} task(s), 1 key"),
            "",
            "",
            rate,
            100.0 * rate / ceiling,
            rate / 600.0
        );
    }
    Ok(())
}
