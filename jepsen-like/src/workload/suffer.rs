//! What a client suffers when the nemesis strikes it inside its critical section: a
//! stall, a cut from the lock servers, a worker that hangs, a crash; and a holder that
//! stays on until the overlap a server-timed fault lets in.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use locklab_implementations::DistributedLock;
use locklab_models::registry::Fault;
use locklab_traces::format::{ClientStep, Injected};

use crate::deadline::Deadline;
use crate::family::Client;
use crate::log::Log;

/// A stop-the-world stall of this client, as the nemesis asked: its connections'
/// background traffic (etcd's lease keep-alives) stops with it, and so does a lock
/// client that is a process of its own (`SIGSTOP`).
pub(super) async fn pause(
    log: &Log,
    id: u32,
    ms: u64,
    overstay: bool,
    lock: &dyn DistributedLock,
    client: &impl Client,
) {
    log.nemesis(
        Injected::client(
            ClientStep::Suffers(Fault::Pause),
            format!("c{id}"),
            Some(ms),
        ),
        Some(format!("c{id} stalls inside its critical section")),
    );
    client.stall(Duration::from_millis(ms));
    lock.stall(Duration::from_millis(ms)).await;
    let resumed = Instant::now();
    // The model's stale holder takes its next step while another client holds the lock:
    // that is where its write or release does its harm. A scripted pause whose holder
    // stepped on in the few milliseconds between two holders showed nothing (one run in
    // thirty of redis-del-unconditional on a loaded machine), so the resumed holder's
    // next step waits, a quarter of the pause at most, until another client has just
    // entered: it then lands early in that client's section, not at its end. The wait
    // is the harness's own, after the stall: a stopped process or session resumed in
    // slices would get a few moments to renew or ping in between. This client is
    // inside, so any new entry is another's.
    let entries = log.entries();
    let entered = || log.entries() > entries && log.another_inside(id);
    let mut waited = 0;
    while overstay && !entered() && waited < ms / 4 {
        tokio::time::sleep(Duration::from_millis(PAUSE_SLICE_MS)).await;
        waited += PAUSE_SLICE_MS;
    }
    let note = match (overstay, entered()) {
        (false, _) => None,
        (true, true) => Some(format!(
            "c{id}'s next step waited {waited} ms, until another client had entered"
        )),
        (true, false) => Some(format!(
            "c{id}'s next step waited {waited} ms and nobody else entered"
        )),
    };
    // Stamped when the stall ended: the wait after it is this client's, not the pause.
    log.nemesis_at(
        resumed,
        Injected::client(ClientStep::Resume, format!("c{id}"), None),
        note,
    );
}

/// How finely a resumed holder waiting for another to enter looks again.
const PAUSE_SLICE_MS: u64 = 10;

/// How long past a holder's wait for an overlap the other clients go on asking: enough
/// for an acquire sent as the wait ends to be answered.
const OVERLAP_TRIES: Duration = Duration::from_secs(1);

/// How long a holder stays on past its work for another client to enter
/// ([`crate::plan::Plan::overlap_within_ms`]), and when the first such wait of the run
/// ends: the run goes on until then however late the overlap comes, and no longer.
pub struct OverlapWait {
    within: Duration,
    first_ends: OnceLock<Instant>,
}

impl OverlapWait {
    /// A holder waits at most `within`.
    pub fn new(within: Duration) -> Self {
        OverlapWait {
            within,
            first_ends: OnceLock::new(),
        }
    }
}

/// This holder stays in its section until another client has entered, for at most
/// `wait.within`, unless two clients have been inside together already: the overlap a
/// server-timed fault (Sentinel's failover) lets in comes when the servers are done,
/// which a loaded machine delays by seconds.
pub(super) async fn stay_for_overlap(log: &Log, id: u32, wait: &OverlapWait, deadline: &Deadline) {
    let start = Instant::now();
    // The first wait is the one the row's fault set up; a later holder's wait (the lock
    // working again after the fault) must not keep the run going wait after wait.
    let cap = *wait.first_ends.get_or_init(|| start + wait.within) + OVERLAP_TRIES;
    while !log.overlapped() && !log.another_inside(id) && start.elapsed() < wait.within {
        // The others keep asking while this holder waits for them: what lets the next
        // one in is timed by the servers, and on a loaded machine comes after the
        // run's planned end.
        deadline.at_least((Instant::now() + OVERLAP_TRIES).min(cap));
        tokio::time::sleep(Duration::from_millis(PAUSE_SLICE_MS)).await;
    }
}

/// This client is cut off from the lock servers for `ms`, as the nemesis asked, and
/// works on meanwhile for as long as its lock does not tell it it lost the lock (a lease
/// deadline passing tells it nothing: etcd's lock-set client never looks): unlike a
/// pause, it runs, and its background traffic (etcd's lease keep-alives, ZooKeeper's
/// pings) keeps trying and failing. `Some` (why it stopped, for the section's `leave`)
/// when the lock said it lost first.
pub(super) async fn partition(
    log: &Arc<Log>,
    id: u32,
    ms: u64,
    client: &impl Client,
    guard: &locklab_implementations::LockGuard,
) -> Option<String> {
    let target = format!("c{id}");
    let d = Duration::from_millis(ms);
    if let Err(e) = client.cut_off(d) {
        log.nemesis(
            Injected::skipped(&ClientStep::Suffers(Fault::Partition).name(), &target),
            Some(format!("cannot cut {target} off: {e}")),
        );
        return None;
    }
    log.nemesis(
        Injected::client(ClientStep::Suffers(Fault::Partition), &target, Some(ms)),
        Some(format!(
            "{target} is cut off from the lock servers and works on"
        )),
    );
    let heal_log = log.clone();
    tokio::spawn(async move {
        tokio::time::sleep(d).await;
        heal_log.nemesis(Injected::client(ClientStep::Heal, target, None), None);
    });
    let cut = Instant::now();
    tokio::select! {
        _ = tokio::time::sleep(d) => None,
        why = guard.told_lost() => Some(format!(
            "stopped working {} ms into the partition: its lock said {why:?}",
            cut.elapsed().as_millis()
        )),
    }
}

/// This client's worker hangs inside its section for the rest of the run (a deadlock,
/// a call that never returns) while everything else in its process runs on: its lock
/// guard stays alive, and with it the heartbeat that keeps its lock (ZooKeeper's pings,
/// etcd's keep-alives, Redisson's watchdog).
pub(super) async fn hang(log: &Log, id: u32, deadline: &Deadline) {
    log.nemesis(
        Injected::client(ClientStep::Suffers(Fault::Hang), format!("c{id}"), None),
        Some(format!(
            "c{id}'s worker hangs inside its critical section; its heartbeat runs on"
        )),
    );
    while !deadline.left().is_zero() {
        tokio::time::sleep(deadline.left().min(Duration::from_millis(100))).await;
    }
    // Still hung while the others' last tries end: the lock this process holds goes
    // with it (a session closed, a key no longer renewed), and a try still open at the
    // deadline must not be granted by the run ending (one of six seeds was, at once).
    tokio::time::sleep(HANG_OUTLASTS).await;
}

/// How long a hung worker outlasts the run's deadline: longer than any try open at the
/// deadline takes to end.
const HANG_OUTLASTS: Duration = Duration::from_millis(500);

/// This client dies: it records why and does nothing more, ever.
pub(super) fn crash(log: &Log, id: u32, when: &str) {
    log.nemesis(
        Injected::client(ClientStep::Suffers(Fault::Crash), format!("c{id}"), None),
        Some(format!("c{id} crashed {when}; it never releases")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_traces::format::Header;

    /// A holder's wait for an overlap keeps the run going, and a later holder's wait
    /// keeps it going no further than the first wait's end: a run whose lock works
    /// again after its fault must end (a wait per section once kept one for ever).
    #[tokio::test]
    async fn only_the_first_wait_for_an_overlap_keeps_the_run_going() {
        let path = std::env::temp_dir().join(format!("overlap-wait-{}.jsonl", std::process::id()));
        let log = Log::create(&path, &Header::default()).expect("a history file");
        let deadline = Deadline::new(Instant::now());
        let wait = OverlapWait::new(Duration::from_millis(100));
        let before = Instant::now();
        stay_for_overlap(&log, 0, &wait, &deadline).await;
        let after_first = Instant::now();
        assert!(
            deadline.get() >= before + OVERLAP_TRIES,
            "the first wait extended nothing"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        stay_for_overlap(&log, 1, &wait, &deadline).await;
        assert!(
            deadline.get() <= after_first + OVERLAP_TRIES,
            "a later wait kept the run going past the first one's end"
        );
        let _ = std::fs::remove_file(&path);
    }
}
