//! Acquire+release pairs per second of the etcd recipe lock (`concurrency.Mutex` on a
//! session lease, `implementations/src/etcd/recipe.rs`), 1 client and 16 clients on one
//! lock, on a 3-member cluster, next to a ceiling measured on the same cluster in the
//! same run: raw put+delete pairs per second with the same number of clients, each
//! client putting and deleting a key of its own (`etcdctl check perf` measures puts;
//! a lock pair is a write to take the lock and one to free it, so the ceiling pairs a
//! put with a delete). `cargo bench -p locklab-implementations --features backends
//! --bench etcd_lock`.
//!
//! One client pays two writes per pair, as the ceiling does: the `Txn` that creates its
//! key and reads the owner, and the delete. Sixteen clients on one lock are serialised
//! by it, so their rate cannot beat the 1-client ceiling: a hand-over is the holder's
//! delete, the watch event that wakes the next waiter, and that waiter's two reads (the
//! key before its own is gone; its own key is still there) before its section. Every
//! client has its own connection (the same in both measurements) and, for the lock,
//! its own session lease, kept alive beside the pairs. Every counted pair is one etcd
//! confirmed: a release counts only when its delete answered 1.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::etcd::{EtcdSession, RecipeLock, RequestLog};
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::etcd::spec::{EtcdCommand, EtcdReply};
use locklab_servers::EtcdCluster;

#[path = "common/pairs.rs"]
mod pairs;

const RUN: Duration = Duration::from_secs(3);
const TTL: Duration = Duration::from_secs(10);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A session whose requests are sent but not kept.
async fn session(cluster: &EtcdCluster) -> Result<EtcdSession, Box<dyn std::error::Error>> {
    let log = RequestLog::streaming(Instant::now(), |_| {});
    Ok(EtcdSession::connect(&cluster.endpoints(), log).await?)
}

/// Put+delete pairs per second, each session putting and deleting a key of its own:
/// `(puts/s, deletes/s, pairs/s)`.
async fn ceiling(sessions: &[EtcdSession]) -> (f64, f64, f64) {
    let puts = Arc::new(AtomicU64::new(0));
    let dels = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for (t, s) in sessions.iter().enumerate() {
        let (s, puts, dels, stop) = (s.clone(), puts.clone(), dels.clone(), stop.clone());
        handles.push(tokio::spawn(async move {
            let key = format!("bench-ceiling-{t}");
            while !stop.load(Ordering::Relaxed) {
                let put = EtcdCommand::Put {
                    key: key.clone(),
                    value: "v".into(),
                    lease: None,
                };
                if matches!(s.exec(put).await, Ok(EtcdReply::Put { .. })) {
                    puts.fetch_add(1, Ordering::Relaxed);
                }
                let del = EtcdCommand::Delete { key: key.clone() };
                if matches!(s.exec(del).await, Ok(EtcdReply::Deleted { deleted: 1 })) {
                    dels.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let start = Instant::now();
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    let (p, d) = (puts.load(Ordering::Relaxed), dels.load(Ordering::Relaxed));
    for h in handles {
        let _ = h.await;
    }
    (p as f64 / secs, d as f64 / secs, d as f64 / secs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = EtcdCluster::three()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!("etcd cluster: 3 members on 127.0.0.1; runtime: multi-thread, 2 workers");
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>8}",
        "median of 3 rounds", "put/s", "del/s", "pairs/s", "vs ceil"
    );
    // The 1-client ceiling: what one lock's serialised clients could reach at most.
    let mut serial_ceiling = None::<f64>;
    for clients in [1usize, 16] {
        let sessions = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..clients {
                v.push(session(&cluster).await?);
            }
            Ok::<_, Box<dyn std::error::Error>>(v)
        })?;
        let locks: Vec<Arc<dyn DistributedLock>> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Arc::new(RecipeLock::new(s.clone(), &format!("b{i}"), TTL))
                    as Arc<dyn DistributedLock>
            })
            .collect();
        let (mut puts, mut dels, mut ceilings, mut rates) = (vec![], vec![], vec![], vec![]);
        // Interleaved rounds, so a burst of load from elsewhere hits both sides alike.
        for _ in 0..3 {
            let (p, d, c) = rt.block_on(ceiling(&sessions));
            puts.push(p);
            dels.push(d);
            ceilings.push(c);
            let lock = pairs::lock_pairs(
                locks.clone(),
                RUN,
                Duration::from_secs(10),
                Lease::Fixed(TTL),
            );
            rates.push(rt.block_on(lock));
        }
        let (ceiling, rate) = (median(&mut ceilings), median(&mut rates));
        println!(
            "{:<34} {:>10.0} {:>10.0} {:>10.0}",
            format!("put+delete, {clients} client(s)"),
            median(&mut puts),
            median(&mut dels),
            ceiling
        );
        let serial = match serial_ceiling {
            Some(one) => format!("  ({:.0}% of the 1-client ceiling)", 100.0 * rate / one),
            None => String::new(),
        };
        println!(
            "{:<34} {:>10} {:>10} {:>10.0} {:>7.0}%{serial}",
            format!("etcd recipe, {clients} client(s), 1 lock"),
            "",
            "",
            rate,
            100.0 * rate / ceiling
        );
        serial_ceiling.get_or_insert(ceiling);
    }
    Ok(())
}
