//! The clients: each loops acquire → critical section (read the counter, work, write it
//! plus one, with the fencing token where the lock has one) → release, recording every
//! operation as it happens (`invoke`, then `ok` / `fail` / `info`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::hold_state::RenewalOutcome;
use locklab_implementations::{
    Acquire, AttemptObserver, AttemptOutcome, DistributedLock, Lease, LockError,
};
use locklab_traces::format::{ClientStep, Injected, OpKind, Phase, Process};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::counter::{Counter, Outcome};
use crate::deadline::Deadline;
use crate::family::Client;
use crate::log::Log;
use crate::nemesis::ClientFaults;
use locklab_models::registry::Fault;

mod suffer;
pub use suffer::OverlapWait;
use suffer::{crash, hang, partition, pause, stay_for_overlap};

/// What every client shares.
pub struct Shared {
    /// The history.
    pub log: Arc<Log>,
    /// Pauses and crashes the nemesis asks for.
    pub faults: Arc<ClientFaults>,
    /// The lock name.
    pub key: String,
    /// Lease per acquire.
    pub lease: Lease,
    /// Work between the read and the write.
    pub work: Duration,
    /// How long a holder stays on past `work` for another client to enter, until two
    /// have been inside together ([`crate::plan::Plan::overlap_within_ms`]).
    pub overlap: Option<OverlapWait>,
    /// No acquire starts after this (pushed back when a fault fires late).
    pub deadline: Arc<Deadline>,
    /// Each section calls `lock()` again on the lock it holds ([`Family::nested`]).
    ///
    /// [`Family::nested`]: crate::family::Family::nested
    pub nested: bool,
}

/// One client's loop over its connections `client`. `seed` draws its think times.
pub async fn client<C: Client>(
    id: u32,
    lock: Box<dyn DistributedLock>,
    client: C,
    resource: Arc<dyn Counter>,
    shared: Arc<Shared>,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(u64::from(id) * 0x9e37_79b9));
    let log = &shared.log;
    let me = Process::Client(id);
    let lease_ns = shared
        .lease
        .ttl()
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    loop {
        let left = shared.deadline.left();
        if left.is_zero() {
            return;
        }
        // Every try is its own operation (see `Tries`); the wait as a whole is not.
        let tries = Tries {
            log,
            me,
            key: &shared.key,
            lease_ns,
        };
        let acquired = lock
            .acquire_observed(Acquire {
                wait: left,
                lease: shared.lease,
                observer: &tries,
            })
            .await;
        let guard = match acquired {
            Ok(g) => g,
            Err(LockError::InjectedFault(between)) => {
                // The lock's own crash knob: this client died between two commands.
                crash(log, id, between);
                return;
            }
            Err(LockError::ClientGone(why)) => {
                // The client's own process died on its own: it will do nothing more.
                crash(log, id, &why);
                return;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..30))).await;
                continue;
            }
        };
        if let Lease::Watchdog(_) = shared.lease {
            guard.observe_renewals(renewals(shared.log.clone(), me, shared.key.clone()));
        }
        let token = guard.token();
        let mut enter = Log::event(me, OpKind::Enter, Phase::Ok);
        enter.token = token;
        log.record(enter);

        let in_tx = resource.commits_with_release();
        let section = section(id, &*lock, &client, &*resource, &shared, &tries, &guard);
        match section.await {
            After::Release(done) => release(id, &client, &shared, guard, done, in_tx).await,
            After::Abandon => {
                guard.abandon();
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..10))).await;
    }
}

/// How a section ended.
enum After {
    /// Its work done (or cut short): the release follows, with what the section left.
    Release(Section),
    /// The client's process died, or its worker never comes back: nothing is released,
    /// and the lock goes when the process's sessions close.
    Abandon,
}

/// What a section leaves its release to do.
#[derive(Default)]
struct Section {
    /// A write whose effect waits for the COMMIT that releases the lock.
    pending: Option<locklab_traces::format::Event>,
    /// The server ended the session: the section's writes rolled back with it.
    rolled_back: bool,
    /// The reply to the release is to be lost (the model's `drop`).
    lose_release_reply: bool,
    /// The unit of work fails after its section: the release rolls its transaction
    /// back instead of committing it.
    roll_back: bool,
    /// Why the client stopped working before its write, when its lock said it lost.
    stopped: Option<String>,
}

/// The critical section: read the counter, work (locking again where the section
/// nests), suffer the fault the nemesis asked of this client, write the counter plus
/// one.
async fn section<C: Client>(
    id: u32,
    lock: &dyn DistributedLock,
    client: &C,
    resource: &dyn Counter,
    shared: &Shared,
    tries: &Tries<'_>,
    guard: &locklab_implementations::LockGuard,
) -> After {
    let (log, me, token) = (&*shared.log, Process::Client(id), guard.token());
    let in_tx = resource.commits_with_release();
    let mut s = Section::default();
    match read(resource, me, token, log).await {
        Read::Value(v) => {
            tokio::time::sleep(shared.work).await;
            if let Some(wait) = &shared.overlap {
                stay_for_overlap(log, id, wait, &shared.deadline).await;
            }
            if shared.nested {
                nested(lock, shared, tries).await;
            }
            // The model's client faults, realised on this client. The match names every
            // fault, so a new one does not compile until it has its arm here (or is
            // listed with the faults no client can suffer).
            match shared.faults.take(id).map(|f| (f.fault, f.ms, f.overstay)) {
                Some((Fault::Pause, ms, overstay)) => {
                    pause(log, id, ms, overstay, lock, client).await
                }
                Some((Fault::Partition, ms, _)) => {
                    s.stopped = partition(&shared.log, id, ms, client, guard).await;
                }
                Some((Fault::Drop, ..)) => s.lose_release_reply = true,
                Some((Fault::Rollback, ..)) => s.roll_back = true,
                Some((Fault::Crash, ..)) => {
                    crash(log, id, "inside its critical section, holding the lock");
                    // A dead process releases nothing, but its connections close with
                    // it: the guard is abandoned (no release sent), and the lock handle
                    // and its sessions drop as the task ends, so a server that ties the
                    // lock to the session (FOR UPDATE, GET_LOCK, advisory locks) frees
                    // it as it would for a crashed process.
                    return After::Abandon;
                }
                Some((Fault::Hang, ..)) => {
                    hang(log, id, &shared.deadline).await;
                    // The run is over; the worker never came back.
                    return After::Abandon;
                }
                Some((
                    other @ (Fault::Failover
                    | Fault::Restart
                    | Fault::Jump
                    | Fault::Kill
                    | Fault::Skew
                    | Fault::Split
                    | Fault::Revoke
                    | Fault::ReaperDies),
                    ..,
                )) => log.nemesis(
                    Injected::skipped(&ClientStep::Suffers(other).name(), &format!("c{id}")),
                    Some(format!("{other} is no fault a client can suffer here")),
                ),
                None => {}
            }
            let written = match s.stopped {
                Some(_) => Write::Done,
                None => {
                    let value = v.unwrap_or(0) + 1;
                    write(resource, me, token, guard.key(), value, log, in_tx).await
                }
            };
            match written {
                Write::Done => {}
                Write::AtCommit(done) => s.pending = Some(done),
                Write::RolledBack => s.rolled_back = true,
            }
        }
        Read::RolledBack => s.rolled_back = true,
        Read::Nothing => {}
    }
    After::Release(s)
}

/// Leaves the section and releases the lock, recording both (in a transaction, once
/// the COMMIT that is the release has answered, stamped with when it left).
async fn release<C: Client>(
    id: u32,
    client: &C,
    shared: &Shared,
    guard: locklab_implementations::LockGuard,
    s: Section,
    in_tx: bool,
) {
    let (log, me) = (&*shared.log, Process::Client(id));
    let mut leave = Log::event(me, OpKind::Leave, Phase::Ok);
    leave.note = s.stopped;
    if s.rolled_back {
        // The server ended the session: the transaction, and every write of this
        // section, rolled back, so the section excluded no one and counts for nothing.
        leave.phase = Phase::Fail;
        leave.note = Some("its transaction rolled back with the session".into());
    }
    let mut inv = Log::event(me, OpKind::Release, Phase::Invoke);
    inv.key = Some(shared.key.clone().as_str().into());
    // In a transaction the section ends as its COMMIT (the release) leaves, and the
    // write is known to have taken effect only once the COMMIT answered: both are
    // written after that answer, stamped with when the COMMIT left.
    let leaving = Instant::now();
    if !in_tx {
        log.record(leave.clone());
        log.record(inv.clone());
    }
    if s.lose_release_reply {
        // Armed right before the release, so that its request is the one whose answer
        // goes missing.
        let armed = client.lose_next_reply();
        log.nemesis(
            Injected::client(ClientStep::Suffers(Fault::Drop), format!("c{id}"), None),
            Some(match armed {
                Ok(()) => format!("the reply to c{id}'s release will be lost"),
                Err(e) => format!("cannot lose c{id}'s reply: {e}"),
            }),
        );
    }
    if s.roll_back {
        log.nemesis(
            Injected::client(ClientStep::Suffers(Fault::Rollback), format!("c{id}"), None),
            Some(format!(
                "c{id}'s work fails after its section: its release rolls the transaction back"
            )),
        );
    }
    let released = match s.roll_back {
        true => guard.release_rolling_back().await,
        false => guard.release().await,
    };
    if in_tx {
        if let Some(mut done) = s.pending {
            // The write took effect exactly if the COMMIT did; a COMMIT without its
            // answer may have; a ROLLBACK the server answered undid it for certain.
            match &released {
                Ok(()) => {}
                Err(e @ LockError::RolledBack { .. }) => {
                    done.phase = Phase::Fail;
                    done.note = Some(e.to_string());
                }
                Err(e) => {
                    done.phase = Phase::Info;
                    done.note = Some(format!("its transaction's COMMIT: {e}"));
                }
            }
            log.record(done);
        }
        log.record_at(leave, leaving);
        log.record_at(inv, leaving);
    }
    log.record(release_done(me, &shared.key, released));
}

/// A release's answer as its history event: `ok`, `fail` when the lock was no longer
/// held (certainly nothing released), `info` when no answer came.
fn release_done(
    me: Process,
    key: &str,
    released: Result<(), LockError>,
) -> locklab_traces::format::Event {
    let (phase, note) = match released {
        Ok(()) => (Phase::Ok, None),
        Err(e @ LockError::NotHeld { .. }) => (Phase::Fail, Some(e.to_string())),
        // The lock was given back; only the work was undone.
        Err(e @ LockError::RolledBack { .. }) => (Phase::Ok, Some(e.to_string())),
        Err(e) => (Phase::Info, Some(e.to_string())),
    };
    let mut done = Log::event(me, OpKind::Release, phase);
    done.key = Some(key.into());
    done.note = note;
    done
}

/// The section's nested `lock()` on the lock its caller holds: it waits as the outer
/// acquire did (a lock that does not count holds refuses it, and it tries again), and
/// releases what it got; each try and the release are written to the history as the
/// outer ones are.
async fn nested(lock: &dyn DistributedLock, shared: &Shared, tries: &Tries<'_>) {
    let inner = lock
        .acquire_observed(Acquire {
            wait: shared.deadline.left(),
            lease: shared.lease,
            observer: tries,
        })
        .await;
    let Ok(guard) = inner else {
        return;
    };
    let mut inv = Log::event(tries.me, OpKind::Release, Phase::Invoke);
    inv.key = Some(shared.key.clone().as_str().into());
    shared.log.record(inv);
    let released = guard.release().await;
    shared
        .log
        .record(release_done(tries.me, &shared.key, released));
}

/// Records each attempt of an acquire as an operation: `invoke` when it is sent, then
/// `ok` with the token, `fail` when the lock was busy (certainly nothing granted), or
/// `info` when no answer came (a grant may hide behind it).
struct Tries<'a> {
    log: &'a Log,
    me: Process,
    key: &'a str,
    lease_ns: Option<u64>,
}

impl Tries<'_> {
    fn event(&self, phase: Phase) -> locklab_traces::format::Event {
        let mut e = Log::event(self.me, OpKind::Acquire, phase);
        e.key = Some(self.key.into());
        if phase == Phase::Invoke {
            e.lease_ns = self.lease_ns;
        }
        e
    }
}

impl AttemptObserver for Tries<'_> {
    fn started(&self) {
        self.log.record(self.event(Phase::Invoke));
    }

    fn ended(&self, outcome: AttemptOutcome<'_>) {
        let e = match outcome {
            AttemptOutcome::Granted { token, lease } => {
                let mut e = self.event(Phase::Ok);
                e.token = token;
                // The lease the service says it granted, where it said so: the checks
                // hold the grant to it rather than to the one asked for.
                e.lease_ns = lease
                    .and_then(|l| l.ttl())
                    .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                e
            }
            AttemptOutcome::Busy { reason } => {
                let mut e = self.event(Phase::Fail);
                e.note = reason.map(str::to_string);
                e
            }
            AttemptOutcome::Unknown(why) => {
                let mut e = self.event(Phase::Info);
                e.note = Some(why.to_string());
                e
            }
        };
        self.log.record(e);
    }

    fn handed_over(&self, since: Instant, token: Option<u64>) {
        self.log.record_at(self.event(Phase::Invoke), since);
        let mut ok = self.event(Phase::Ok);
        ok.token = token;
        self.log.record(ok);
    }
}

/// Records each renewal a grant's watchdog sends as a `renew` of client `me`: the
/// invocation stamped when it left, the answer when it came (`info` when none did).
fn renewals(log: Arc<Log>, me: Process, key: String) -> locklab_implementations::RenewalObserver {
    Arc::new(move |r: locklab_implementations::Renewal| {
        let mut inv = Log::event(me, OpKind::Renew, Phase::Invoke);
        inv.key = Some(key.clone().as_str().into());
        inv.lease_ns = Some(u64::try_from(r.lease.as_nanos()).unwrap_or(u64::MAX));
        log.record_at(inv, r.sent_at);
        let mut done = Log::event(
            me,
            OpKind::Renew,
            match r.outcome {
                RenewalOutcome::Renewed => Phase::Ok,
                RenewalOutcome::Refused => Phase::Fail,
                RenewalOutcome::Failed => Phase::Info,
            },
        );
        done.key = Some(key.clone().as_str().into());
        log.record(done);
    })
}

/// What a read in the critical section came to.
pub enum Read {
    /// It took effect (`None`: never written).
    Value(Option<i64>),
    /// Refused or unanswered: the section does no write.
    Nothing,
    /// Its transaction rolled back with the session.
    RolledBack,
}

/// Reads the counter, recording the read.
pub async fn read(resource: &dyn Counter, me: Process, token: Option<u64>, log: &Log) -> Read {
    let mut inv = Log::event(me, OpKind::Read, Phase::Invoke);
    inv.key = Some(resource.key().into());
    inv.token = token;
    log.record(inv);
    let outcome = resource.read(token).await;
    let (phase, value, note) = match &outcome {
        Outcome::Ok(v) => (Phase::Ok, Some(v.map_or(Value::Null, Value::from)), None),
        Outcome::Refused => (Phase::Fail, None, Some("stale fencing token".to_string())),
        Outcome::Unknown(e) => (Phase::Info, None, Some(e.clone())),
        // A read observes nothing it could change: failed, whatever the session did.
        Outcome::RolledBack(e) => (Phase::Fail, None, Some(format!("session gone: {e}"))),
    };
    let mut done = Log::event(me, OpKind::Read, phase);
    done.key = Some(resource.key().into());
    done.value = value.map(Into::into);
    done.token = token;
    done.note = note;
    log.record(done);
    match outcome {
        Outcome::Ok(v) => Read::Value(v),
        Outcome::RolledBack(_) => Read::RolledBack,
        _ => Read::Nothing,
    }
}

/// What a write in the critical section came to.
enum Write {
    /// Recorded.
    Done,
    /// Sent inside the lock's transaction: its completion, to record once the COMMIT
    /// answered.
    AtCommit(locklab_traces::format::Event),
    /// Its transaction rolled back with the session (recorded as failed).
    RolledBack,
}

async fn write(
    resource: &dyn Counter,
    me: Process,
    token: Option<u64>,
    lock_key: &str,
    value: i64,
    log: &Log,
    in_tx: bool,
) -> Write {
    let mut inv = Log::event(me, OpKind::Write, Phase::Invoke);
    inv.key = Some(resource.key().into());
    inv.value = Some(Value::from(value).into());
    inv.token = token;
    log.record(inv);
    let outcome = resource.write(value, token, lock_key).await;
    let (phase, note) = match &outcome {
        Outcome::Ok(()) => (Phase::Ok, None),
        Outcome::Refused => (Phase::Fail, Some("stale fencing token".to_string())),
        Outcome::Unknown(e) => (Phase::Info, Some(e.clone())),
        Outcome::RolledBack(e) => (Phase::Fail, Some(format!("rolled back: {e}"))),
    };
    let mut done = Log::event(me, OpKind::Write, phase);
    done.key = Some(resource.key().into());
    done.token = token;
    done.note = note;
    match outcome {
        Outcome::Ok(()) if in_tx => Write::AtCommit(done),
        Outcome::RolledBack(_) => {
            log.record(done);
            Write::RolledBack
        }
        _ => {
            log.record(done);
            Write::Done
        }
    }
}
