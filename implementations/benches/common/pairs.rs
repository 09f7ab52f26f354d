//! The loop the lock benchmarks time: one task per worker running a round (an
//! acquire+release pair, or a ceiling's bare writes) as fast as it can for a while.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::{DistributedLock, Lease};

/// Rounds per second over `run` of `workers`, a task each running `round` over and
/// over; a round counts only when it returns `true` (the server confirmed it).
pub async fn rounds_per_sec<W, F, Fut>(workers: Vec<W>, run: Duration, round: F) -> f64
where
    W: Send + Sync + 'static,
    F: Fn(Arc<W>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let rounds = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for worker in workers {
        let (rounds, stop, round, worker) = (
            rounds.clone(),
            stop.clone(),
            round.clone(),
            Arc::new(worker),
        );
        handles.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if round(worker.clone()).await {
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let start = Instant::now();
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    let done = rounds.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.await;
    }
    done as f64 / secs
}

/// Acquire+release pairs per second of `locks` (a task each) over `run`; a pair counts
/// only when its release succeeded (the server confirmed it), and each acquire may wait
/// `wait`.
#[allow(dead_code)] // Each bench includes this file; not every one takes locks.
pub async fn lock_pairs(
    locks: Vec<Arc<dyn DistributedLock>>,
    run: Duration,
    wait: Duration,
    lease: Lease,
) -> f64 {
    rounds_per_sec(locks, run, move |lock| async move {
        match lock.acquire(wait, lease).await {
            Ok(g) => g.release().await.is_ok(),
            Err(e) => {
                eprintln!("acquire: {e}");
                false
            }
        }
    })
    .await
}
