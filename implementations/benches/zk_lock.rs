//! Acquire+release pairs per second of the ZooKeeper recipe lock (`zk-sequential`:
//! ephemeral-sequential node, lowest owns, predecessor watch), 1 client and 16 clients
//! on one lock, each on its own session, next to a ceiling measured on the same 3-server
//! ensemble in the same run: bare `create` (ephemeral, sequential) + `delete` pairs on
//! 1 and on 16 sessions. `cargo bench -p locklab-implementations --features backends
//! --bench zk_lock`.
//!
//! One client pays three round trips per pair (create, getChildren, delete), each write
//! a quorum commit; the ceiling pays two. 16 clients on one lock are serialised by it:
//! each hand-over is the holder's delete, the watch notification to the next waiter,
//! its getChildren and its grant — so the rate cannot beat one client's, while 16
//! sessions of bare pairs share the ensemble's commits. Every counted pair is one the
//! ensemble confirmed (the release's delete answered OK). The recipe's requests go
//! through a recorder whose sink drops them, as cheap as recording gets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::zk::client as zk;
use locklab_implementations::zk::{make_lock_dir, RecipeLock, RequestLog, ZkSession};
use locklab_implementations::{DistributedLock, Lease};
use locklab_servers::ZkEnsemble;

#[path = "common/pairs.rs"]
mod pairs;

const RUN: Duration = Duration::from_secs(3);
const SESSION: Duration = Duration::from_secs(10);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn session(connect: &str) -> Result<ZkSession, String> {
    let log = RequestLog::streaming(Instant::now(), |_| {});
    ZkSession::connect(connect, SESSION, log, false)
        .await
        .map_err(|e| format!("connecting to {connect}: {e}"))
}

async fn lock_pairs(connect: &str, tasks: usize) -> Result<f64, String> {
    let mut locks: Vec<Arc<dyn DistributedLock>> = Vec::new();
    for t in 0..tasks {
        let s = session(connect).await?;
        make_lock_dir(&s).await.map_err(|e| e.to_string())?;
        locks.push(Arc::new(RecipeLock::new(s, &format!("b{t}")).unfenced()));
    }
    Ok(pairs::lock_pairs(locks, RUN, Duration::from_secs(10), Lease::Unbounded).await)
}

async fn bare_pairs(connect: &str, tasks: usize) -> Result<f64, String> {
    let mut clients = Vec::new();
    for _ in 0..tasks {
        clients.push(session(connect).await?.client().clone());
    }
    let dir = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match clients[0].create("/ceiling", &[], &dir).await {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(e) => return Err(format!("create /ceiling: {e}")),
    }
    Ok(pairs::rounds_per_sec(clients, RUN, |client| async move {
        let mode = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let Ok((_, seq)) = client.create("/ceiling/n-", &[], &mode).await else {
            return false;
        };
        client
            .delete(&format!("/ceiling/n-{seq}"), None)
            .await
            .is_ok()
    })
    .await)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ensemble = ZkEnsemble::three()?;
    let connect = ensemble.connect_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The servers' JIT warms up first, or the first round measures it.
    rt.block_on(bare_pairs(&connect, 16))?;
    println!("runtime: multi-thread, 2 workers; a 3-server ensemble (tick 500 ms)");
    println!(
        "{:<44} {:>10} {:>8}",
        "median of 3 rounds", "pairs/s", "vs ceil"
    );
    for tasks in [1usize, 16] {
        let mut ceilings = Vec::new();
        let mut rates = Vec::new();
        // Interleaved rounds, so a burst of load from elsewhere hits both sides alike.
        for _ in 0..3 {
            ceilings.push(rt.block_on(bare_pairs(&connect, tasks))?);
            rates.push(rt.block_on(lock_pairs(&connect, tasks))?);
        }
        let (ceiling, rate) = (median(&mut ceilings), median(&mut rates));
        println!(
            "{:<44} {:>10.0}",
            format!("create+delete, {tasks} session(s)"),
            ceiling
        );
        println!(
            "{:<44} {:>10.0} {:>7.0}%",
            format!("zk-sequential recipe, {tasks} client(s), 1 lock"),
            rate,
            100.0 * rate / ceiling
        );
    }
    Ok(())
}
