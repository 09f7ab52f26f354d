//! Liveness after a crash, as far as a finite history can show it: once a client died
//! (the nemesis recorded a `client-crash`), did anyone get the lock again? A history
//! cannot prove "never" — it ends. What it can show is bounded: the others kept trying
//! for at least `k` leases after the crash and nobody was granted. That is what a lock
//! stuck forever looks like for as long as it was watched, and it is reported as that
//! observation, never as a proven violation.

use std::time::Duration;

use serde::Serialize;

use crate::format::{History, OpKind, Phase, Process};

/// What the history shows after a client crashed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Liveness {
    /// The client that crashed (`c0`).
    pub crashed: String,
    /// When, in ns of the history's clock.
    pub crashed_at_ns: u64,
    /// The longest lease the clients asked for (ns), the unit of the observation
    /// (`None`: the lock asks for none).
    pub lease_ns: Option<u64>,
    /// Acquire attempts by the other clients after the crash.
    pub tries: u64,
    /// How many other clients tried.
    pub trying_clients: usize,
    /// From the crash to the last attempt (ns): how long it was watched.
    pub watched_ns: u64,
    /// The first grant after the crash, ns after it.
    pub granted_after_ns: Option<u64>,
    /// Nobody was granted although others kept trying for at least the asked number
    /// of leases: consistent with a lock stuck forever, for as long as it was watched.
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
    let (crash_at, crashed) = history.events.iter().find_map(|(_, e)| {
        let v = e.value.as_ref()?;
        if e.op != OpKind::Nemesis || v.get("fault")?.as_str()? != "client-crash" {
            return None;
        }
        let target = v.get("target")?.as_str()?;
        clients
            .contains(target)
            .then(|| (e.time, target.to_string()))
    })?;
    let mut lease_ns = None::<u64>;
    let mut tries = 0u64;
    let mut trying = std::collections::BTreeSet::new();
    let mut last_try = crash_at;
    let mut granted_at = None;
    for (_, e) in &history.events {
        if e.op != OpKind::Acquire {
            continue;
        }
        if let Some(l) = e.lease_ns {
            lease_ns = Some(lease_ns.map_or(l, |m| m.max(l)));
        }
        let other = matches!(e.process, Process::Client(_)) && e.process.to_string() != crashed;
        if e.time <= crash_at || !other {
            continue;
        }
        match e.phase {
            Phase::Invoke => {
                tries += 1;
                trying.insert(e.process.to_string());
                last_try = last_try.max(e.time);
            }
            Phase::Ok if granted_at.is_none() => granted_at = Some(e.time),
            _ => {}
        }
    }
    let watched_ns = last_try - crash_at;
    let ms = |ns: u64| ns as f64 / 1e6;
    let granted_after_ns = granted_at.map(|t| t - crash_at);
    let floor_ns = u64::try_from(floor.as_nanos()).unwrap_or(u64::MAX);
    let needed = lease_ns.map_or(floor_ns, |l| l.saturating_mul(leases).max(floor_ns));
    let stuck = granted_at.is_none() && tries > 0 && watched_ns >= needed;
    let verdict = if stuck {
        ": stuck for as long as the run watched (a bounded observation, not a proof of forever)"
    } else {
        ", but for less time than the observation asks"
    };
    let summary = match (granted_after_ns, lease_ns) {
        (Some(after), _) => format!(
            "{crashed} crashed; the lock was granted again {:.0} ms later: it recovered",
            ms(after)
        ),
        (None, _) if tries == 0 => {
            format!("{crashed} crashed; nobody tried the lock afterwards: nothing to observe")
        }
        (None, Some(l)) => format!(
            "{crashed} crashed holding the lock; {} other client(s) tried {tries} times over {:.0} ms ({:.1} leases of {:.0} ms) and nobody was granted{}",
            trying.len(),
            ms(watched_ns),
            watched_ns as f64 / l.max(1) as f64,
            ms(l),
            verdict
        ),
        (None, None) => format!(
            "{crashed} crashed holding a lock with no lease; {} other client(s) tried {tries} times over {:.0} ms and nobody was granted{verdict}",
            trying.len(),
            ms(watched_ns),
        ),
    };
    Some(Liveness {
        crashed,
        crashed_at_ns: crash_at,
        lease_ns,
        tries,
        trying_clients: trying.len(),
        watched_ns,
        granted_after_ns,
        stuck,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Event, Header};
    use serde_json::json;

    fn history(grant_after_crash: bool) -> History {
        let ms = 1_000_000;
        let acquire = |c: u32, phase: Phase, t: u64| {
            let mut e = Event::new(Process::Client(c), OpKind::Acquire, phase, t * ms);
            e.lease_ns = Some(100 * ms);
            e
        };
        let mut crash = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 10 * ms);
        crash.value = Some(json!({"fault": "client-crash", "target": "c0"}));
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
        History {
            source: "test".into(),
            header: Header::new("t", "redis"),
            events: events
                .into_iter()
                .enumerate()
                .map(|(i, e)| (i + 2, e))
                .collect(),
            warnings: Vec::new(),
        }
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

    #[test]
    fn a_grant_after_the_crash_is_recovery() {
        let l = after_crash(&history(true), 4, Duration::ZERO).expect("a crash");
        assert!(!l.stuck);
        assert_eq!(l.granted_after_ns, Some(291_000_000));
    }
}
