//! The clients: each loops acquire → critical section (read the counter, work, write it
//! plus one, with the fencing token where the lock has one) → release, recording every
//! operation as it happens (`invoke`, then `ok` / `fail` / `info`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::{DistributedLock, Lease, LockError};
use locklab_traces::format::{OpKind, Phase, Process};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::log::Log;
use crate::nemesis::ClientPauses;
use crate::resource::{Outcome, Resource};

/// What every client shares.
pub struct Shared {
    /// The history.
    pub log: Arc<Log>,
    /// Pauses the nemesis asks for.
    pub pauses: Arc<ClientPauses>,
    /// The lock name.
    pub key: String,
    /// Lease per acquire.
    pub ttl: Duration,
    /// Work between the read and the write.
    pub work: Duration,
    /// No acquire starts after this.
    pub deadline: Instant,
}

/// One client's loop. `seed` draws its think times.
pub async fn client(
    id: u32,
    lock: Box<dyn DistributedLock>,
    resource: Resource,
    shared: Arc<Shared>,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(u64::from(id) * 0x9e37_79b9));
    let log = &shared.log;
    let me = Process::Client(id);
    let lease_ns = u64::try_from(shared.ttl.as_nanos()).unwrap_or(u64::MAX);
    loop {
        let left = shared.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut inv = Log::event(me, OpKind::Acquire, Phase::Invoke);
        inv.key = Some(shared.key.clone());
        inv.lease_ns = Some(lease_ns);
        log.record(inv);
        let guard = match lock.acquire(left, Lease::Fixed(shared.ttl)).await {
            Ok(g) => {
                let mut ok = Log::event(me, OpKind::Acquire, Phase::Ok);
                ok.key = Some(shared.key.clone());
                ok.token = g.token();
                log.record(ok);
                g
            }
            Err(e) => {
                // Only a lock that stayed busy throughout certainly granted nothing; an
                // error may hide a grant whose reply was lost.
                let phase = match &e {
                    LockError::Timeout {
                        last_error: None, ..
                    } => Phase::Fail,
                    _ => Phase::Info,
                };
                let mut done = Log::event(me, OpKind::Acquire, phase);
                done.key = Some(shared.key.clone());
                done.note = Some(e.to_string());
                log.record(done);
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..30))).await;
                continue;
            }
        };
        let token = guard.token();
        let mut enter = Log::event(me, OpKind::Enter, Phase::Ok);
        enter.token = token;
        log.record(enter);

        if let Some(v) = read(&resource, me, token, log).await {
            tokio::time::sleep(shared.work).await;
            if let Some(ms) = shared.pauses.take() {
                pause(log, id, ms).await;
            }
            write(&resource, me, token, v.unwrap_or(0) + 1, log).await;
        }

        log.record(Log::event(me, OpKind::Leave, Phase::Ok));
        let mut inv = Log::event(me, OpKind::Release, Phase::Invoke);
        inv.key = Some(shared.key.clone());
        log.record(inv);
        let (phase, note) = match guard.release().await {
            Ok(()) => (Phase::Ok, None),
            Err(e @ LockError::NotHeld { .. }) => (Phase::Fail, Some(e.to_string())),
            Err(e) => (Phase::Info, Some(e.to_string())),
        };
        let mut done = Log::event(me, OpKind::Release, phase);
        done.key = Some(shared.key.clone());
        done.note = note;
        log.record(done);
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..10))).await;
    }
}

/// A stop-the-world stall of this client, as the nemesis asked.
async fn pause(log: &Log, id: u32, ms: u64) {
    log.nemesis(
        json!({"fault": "client-pause", "target": format!("c{id}"), "ms": ms}),
        Some(format!("c{id} stalls inside its critical section")),
    );
    tokio::time::sleep(Duration::from_millis(ms)).await;
    log.nemesis(
        json!({"fault": "client-resume", "target": format!("c{id}")}),
        None,
    );
}

/// Reads the counter; `Some(value)` when the read took effect.
pub async fn read(
    resource: &Resource,
    me: Process,
    token: Option<u64>,
    log: &Log,
) -> Option<Option<i64>> {
    let mut inv = Log::event(me, OpKind::Read, Phase::Invoke);
    inv.key = Some(resource.key().to_string());
    inv.token = token;
    log.record(inv);
    let outcome = resource.read(token).await;
    let (phase, value, note) = match &outcome {
        Outcome::Ok(v) => (Phase::Ok, Some(v.map_or(Value::Null, Value::from)), None),
        Outcome::Refused => (Phase::Fail, None, Some("stale fencing token".to_string())),
        Outcome::Unknown(e) => (Phase::Info, None, Some(e.clone())),
    };
    let mut done = Log::event(me, OpKind::Read, phase);
    done.key = Some(resource.key().to_string());
    done.value = value;
    done.token = token;
    done.note = note;
    log.record(done);
    match outcome {
        Outcome::Ok(v) => Some(v),
        _ => None,
    }
}

async fn write(resource: &Resource, me: Process, token: Option<u64>, value: i64, log: &Log) {
    let mut inv = Log::event(me, OpKind::Write, Phase::Invoke);
    inv.key = Some(resource.key().to_string());
    inv.value = Some(Value::from(value));
    inv.token = token;
    log.record(inv);
    let (phase, note) = match resource.write(value, token).await {
        Outcome::Ok(()) => (Phase::Ok, None),
        Outcome::Refused => (Phase::Fail, Some("stale fencing token".to_string())),
        Outcome::Unknown(e) => (Phase::Info, Some(e)),
    };
    let mut done = Log::event(me, OpKind::Write, phase);
    done.key = Some(resource.key().to_string());
    done.token = token;
    done.note = note;
    log.record(done);
}
