//! Liveness after a crash, as far as a finite history can show it: once a client died
//! (the nemesis recorded a `client-crash`), its worker hung while its heartbeat ran on
//! (a `client-hang`), or it lost the reply to a request that may have taken the lock
//! (a `lost-reply`), did anyone get the lock again? A history cannot
//! prove "never" — it ends. What it can show is bounded: the others kept trying for at
//! least `k` leases after the fault and nobody was granted. That is what a lock stuck
//! forever looks like for as long as it was watched, and it is reported as that
//! observation, never as a proven violation. A client queued for the lock (one acquire
//! from joining the queue to the grant) tries for as long as its acquire is open.

use std::time::Duration;

use serde::Serialize;

use locklab_models::registry::Fault;

use crate::format::{ClientStep, History, OpKind, Phase, Process, What};

/// What struck the client the observation follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Struck {
    /// It died.
    Died,
    /// Its worker hung, its heartbeat running on.
    Hung,
    /// It lost the reply to a request that may have taken the lock; it goes on.
    LostReply,
}

impl Struck {
    /// What happened to `client`, and whether it held the lock when it did, in words.
    fn words(self, client: &str) -> (String, &'static str) {
        match self {
            Struck::LostReply => (format!("{client} lost a reply"), ""),
            Struck::Hung => (
                format!("{client}'s worker hung (its heartbeat running on)"),
                " holding the lock",
            ),
            Struck::Died => (format!("{client} crashed"), " holding the lock"),
        }
    }
}

/// What the history shows after a client crashed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Liveness {
    /// The client that crashed (`c0`), or whose reply was lost.
    pub crashed: String,
    /// The fault (`client-crash`, `lost-reply`).
    pub fault: String,
    /// When, in ns of the history's clock.
    pub crashed_at_ns: u64,
    /// The longest lease the clients asked for (ns), the unit of the observation
    /// (`None`: the lock asks for none).
    pub lease_ns: Option<u64>,
    /// Acquire attempts by the clients after the crash (the crashed one is dead).
    pub tries: u64,
    /// How many clients tried.
    pub trying_clients: usize,
    /// From the crash to the last attempt (ns): how long it was watched.
    pub watched_ns: u64,
    /// The first grant after the crash, ns after it.
    pub granted_after_ns: Option<u64>,
    /// The run's last stretch without a grant (ns): from the last grant after the fault,
    /// or from the fault, to the last try.
    pub quiet_ns: u64,
    /// Nobody was granted in that last stretch although clients kept trying for at
    /// least the asked number of leases: consistent with a lock stuck forever, for as
    /// long as it was watched.
    pub stuck: bool,
    /// One sentence.
    pub summary: String,
}

/// Looks at what followed the first client crash; `None` if no client crashed.
/// Trying without a grant for `leases` leases, and for at least `floor` (the only
/// measure when the lock asks for no lease), counts as stuck.
pub fn after_crash(history: &History, leases: u64, floor: Duration) -> Option<Liveness> {
    // The crash of a client the history has (a nemesis's request for "any client"
    // names none).
    let clients: std::collections::BTreeSet<String> = history
        .events
        .iter()
        .filter(|(_, e)| matches!(e.process, Process::Client(_)))
        .map(|(_, e)| e.process.to_string())
        .collect();
    // The faults after which the observation is made: the client's lock may be left
    // taken by nobody who will release it. `dead`: the client does nothing more.
    let (crash_at, crashed, fault, struck) = history.events.iter().find_map(|(_, e)| {
        let i = e.injected()?;
        let struck = match &i.what {
            What::Client { step, .. } if step.ends_the_client() => {
                if *step == ClientStep::Suffers(Fault::Hang) {
                    Struck::Hung
                } else {
                    Struck::Died
                }
            }
            What::LostReply => Struck::LostReply,
            What::Client { .. }
            | What::Protocol { .. }
            | What::Failover { .. }
            | What::Skipped
            | What::Server(_) => return None,
        };
        let target = i.target.as_deref()?;
        clients
            .contains(target)
            .then(|| (e.time, target.to_string(), i.what.name(), struck))
    })?;
    let mut lease_ns = None::<u64>;
    let mut tries = 0u64;
    let mut trying = std::collections::BTreeSet::new();
    let mut last_try = crash_at;
    // Grants after the fault: how many, the first, the last.
    let mut grants = 0u64;
    let mut first_grant = None;
    let mut last_grant = None;
    // When a client tried, to know who tried after the last grant.
    let mut tried_at: Vec<(u64, String)> = Vec::new();
    // A crashed or hung client does nothing more; one that lost a reply goes on, and
    // its own grant is the lock working again.
    let dead = (struck != Struck::LostReply).then_some(crashed.as_str());
    for (_, e) in &history.events {
        if e.op != OpKind::Acquire {
            continue;
        }
        if let Some(l) = e.lease_ns {
            lease_ns = Some(lease_ns.map_or(l, |m| m.max(l)));
        }
        let name = e.process.to_string();
        let counted = matches!(e.process, Process::Client(_)) && dead != Some(name.as_str());
        if e.time <= crash_at || !counted {
            continue;
        }
        match e.phase {
            Phase::Invoke => {
                tries += 1;
                last_try = last_try.max(e.time);
                tried_at.push((e.time, name.clone()));
                trying.insert(name);
            }
            Phase::Ok => {
                grants += 1;
                first_grant.get_or_insert(e.time);
                last_grant = Some(e.time);
            }
            // An acquire that ends without a grant was trying until it ended.
            Phase::Fail | Phase::Info => {
                last_try = last_try.max(e.time);
                tried_at.push((e.time, name.clone()));
                trying.insert(name);
            }
        }
    }
    let watched_ns = last_try - crash_at;
    // The run's last stretch without a grant: from the last grant after the fault (or
    // the fault) to the last try.
    let quiet_from = last_grant.unwrap_or(crash_at);
    let quiet_ns = last_try.saturating_sub(quiet_from);
    let quiet_trying = tried_at
        .iter()
        .filter(|(t, _)| *t > quiet_from)
        .map(|(_, c)| c)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let ms = |ns: u64| ns as f64 / 1e6;
    let granted_after_ns = first_grant.map(|t| t - crash_at);
    let floor_ns = u64::try_from(floor.as_nanos()).unwrap_or(u64::MAX);
    let needed = lease_ns.map_or(floor_ns, |l| l.saturating_mul(leases).max(floor_ns));
    let stuck = quiet_trying > 0 && quiet_ns >= needed;
    let (what, holding) = struck.words(&crashed);
    let verdict = if stuck {
        ": stuck for as long as the run watched (a bounded observation, not a proof of forever)"
    } else {
        ", but for less time than the observation asks"
    };
    let leases_of = |ns: u64| match lease_ns {
        Some(l) => format!(
            " ({:.1} leases of {:.0} ms)",
            ns as f64 / l.max(1) as f64,
            ms(l)
        ),
        None => " (the lock has no lease)".to_string(),
    };
    let summary = match (last_grant, stuck) {
        (Some(last), true) => format!(
            "{what}; the lock was granted {grants} time(s) after it, the last {:.0} ms later; then {quiet_trying} client(s) tried for {:.0} ms{} and nobody was granted{verdict}",
            ms(last - crash_at),
            ms(quiet_ns),
            leases_of(quiet_ns),
        ),
        (Some(_), false) => format!(
            "{what}; the lock was granted again {:.0} ms later: it recovered",
            ms(granted_after_ns.unwrap_or(0))
        ),
        (None, _) if trying.is_empty() => {
            format!("{what}; nobody tried the lock afterwards: nothing to observe")
        }
        (None, _) => format!(
            "{what}{holding}; {} client(s) tried ({tries} new tries) over {:.0} ms{} and nobody was granted{verdict}",
            trying.len(),
            ms(watched_ns),
            leases_of(watched_ns),
        ),
    };
    Some(Liveness {
        crashed,
        fault,
        crashed_at_ns: crash_at,
        lease_ns,
        tries,
        trying_clients: trying.len(),
        watched_ns,
        granted_after_ns,
        quiet_ns,
        stuck,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Backend;
    use crate::format::{Event, Header};
    use serde_json::json;

    fn history(grant_after_crash: bool) -> History {
        history_after("client-crash", grant_after_crash)
    }

    fn history_after(fault: &str, grant_after_crash: bool) -> History {
        let ms = 1_000_000;
        let acquire = |c: u32, phase: Phase, t: u64| {
            let mut e = Event::new(Process::Client(c), OpKind::Acquire, phase, t * ms);
            e.lease_ns = Some(100 * ms);
            e
        };
        let mut crash = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 10 * ms);
        crash.value = Some(json!({"fault": fault, "target": "c0"}).into());
        let mut events = vec![
            acquire(0, Phase::Invoke, 0),
            acquire(0, Phase::Ok, 1),
            crash,
        ];
        for t in (20..600).step_by(20) {
            events.push(acquire(1, Phase::Invoke, t));
            let granted = grant_after_crash && t == 300;
            events.push(acquire(
                1,
                if granted { Phase::Ok } else { Phase::Fail },
                t + 1,
            ));
        }
        History::of("test", Header::new("t", Backend::Redis), events)
    }

    #[test]
    fn a_hung_worker_is_watched_as_a_crash_is() {
        let l =
            after_crash(&history_after("client-hang", false), 4, Duration::ZERO).expect("a hang");
        assert!(l.stuck && l.fault == "client-hang", "{l:?}");
        assert!(l.summary.contains("c0's worker hung"), "{}", l.summary);
    }

    #[test]
    fn nobody_granted_for_many_leases_after_a_crash_is_stuck() {
        let l = after_crash(&history(false), 4, Duration::ZERO).expect("a crash");
        assert!(l.stuck, "{l:?}");
        assert_eq!(l.crashed, "c0");
        assert_eq!(l.trying_clients, 1);
        assert!(l.summary.contains("not a proof"), "{}", l.summary);
        let not_enough = after_crash(&history(false), 10, Duration::ZERO).expect("a crash");
        assert!(!not_enough.stuck, "5.7 leases watched, 10 asked");
    }

    /// A lost reply whose orphan blocks the queue once the holder ahead of it leaves:
    /// one grant after the fault, then queued acquires open to the end, none granted.
    #[test]
    fn queued_clients_never_granted_after_the_last_grant_are_stuck() {
        let ms = 1_000_000;
        let acquire = |c: u32, phase: Phase, t: u64| {
            let mut e = Event::new(Process::Client(c), OpKind::Acquire, phase, t * ms);
            e.lease_ns = Some(100 * ms);
            e
        };
        let mut lost = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 10 * ms);
        lost.value = Some(json!({"fault": "lost-reply", "target": "c0"}).into());
        let events = vec![
            acquire(0, Phase::Invoke, 5),
            acquire(1, Phase::Invoke, 5),
            acquire(2, Phase::Invoke, 5),
            lost,
            acquire(1, Phase::Ok, 15),
            acquire(1, Phase::Invoke, 80),
            acquire(0, Phase::Info, 600),
            acquire(1, Phase::Info, 600),
            acquire(2, Phase::Info, 600),
        ];
        let h = History::of("test", Header::new("t", Backend::Zookeeper), events);
        let l = after_crash(&h, 4, Duration::ZERO).expect("a lost reply");
        assert_eq!(l.fault, "lost-reply");
        assert_eq!(l.granted_after_ns, Some(5 * ms));
        assert_eq!(l.quiet_ns, 585 * ms);
        assert!(l.stuck, "{}", l.summary);
        assert!(l.summary.contains("granted 1 time(s)"), "{}", l.summary);
    }

    #[test]
    fn a_grant_after_the_crash_is_recovery() {
        let l = after_crash(&history(true), 4, Duration::ZERO).expect("a crash");
        assert!(!l.stuck);
        assert_eq!(l.granted_after_ns, Some(291_000_000));
    }
}
