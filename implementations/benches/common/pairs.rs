//! The loop the lock benchmarks time: one task per lock handle acquiring and releasing
//! as fast as it can for a while.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::{DistributedLock, Lease};

/// Acquire+release pairs per second of `locks` (a task each) over `run`; a pair counts
/// only when its release succeeded (the server confirmed it), and each acquire may wait
/// `wait`.
pub async fn lock_pairs(
    locks: Vec<Arc<dyn DistributedLock>>,
    run: Duration,
    wait: Duration,
    lease: Lease,
) -> f64 {
    let pairs = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for lock in locks {
        let (pairs, stop) = (pairs.clone(), stop.clone());
        handles.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match lock.acquire(wait, lease).await {
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
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    let done = pairs.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.await;
    }
    done as f64 / secs
}
