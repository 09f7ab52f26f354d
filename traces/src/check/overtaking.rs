//! Starvation as far as a finite history can show it: while one client kept asking
//! for the lock, how many times was it granted to the others? A lock that grants in
//! request order passes a waiter over at most once for each other client ahead of it;
//! a retry loop promises nothing, and a client may lose every race. A history cannot
//! show "for ever" — it ends — so this is a bounded observation, never a proof: the
//! longest such wait, counted in grants to others.
//!
//! A client asks from its first acquire after its last grant (a retry loop's refused
//! tries and a queued acquire alike) to its next grant, or to the end of the history;
//! a client the nemesis crashed or hung asks no more.

use serde::Serialize;

use crate::format::{ClientStep, History, OpKind, Phase, Process};

/// The longest wait of a client while others were granted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Overtaking {
    /// The client that waited through the most grants of others (`c2`).
    pub client: String,
    /// How many times the lock was granted to another client while it asked.
    pub grants_to_others: u64,
    /// How long it asked (ns), from its first try to its grant or the history's end.
    pub asked_ns: u64,
    /// Whether it was granted in the end (`false`: still asking when the history ends).
    pub granted: bool,
    /// How many clients asked for the lock in the history.
    pub clients: usize,
    /// One sentence.
    pub summary: String,
}

impl Overtaking {
    /// The most grants to others a lock granting in request order allows one waiter
    /// to see: once for each other client.
    pub fn queue_allows(&self) -> u64 {
        self.clients.saturating_sub(1) as u64
    }

    /// Whether the wait went past what a queue allows.
    pub fn past_a_queue(&self) -> bool {
        self.grants_to_others > self.queue_allows()
    }
}

/// One client's open wait: since when, and the grants to others it has seen.
#[derive(Clone, Copy)]
struct Asking {
    since: u64,
    passed: u64,
}

/// The longest wait in `history`, counted in grants to other clients; `None` when no
/// client asked while another was granted.
pub fn longest_wait(history: &History) -> Option<Overtaking> {
    let mut asking: std::collections::BTreeMap<u32, Asking> = Default::default();
    let mut askers = std::collections::BTreeSet::new();
    // (grants to others, asked ns, granted, client)
    let mut best: Option<(u64, u64, bool, u32)> = None;
    let mut note = |passed: u64, asked: u64, granted: bool, c: u32| {
        let better = best.is_none_or(|(p, a, _, _)| (passed, asked) > (p, a));
        if passed > 0 && better {
            best = Some((passed, asked, granted, c));
        }
    };
    let mut end = 0;
    for (_, e) in &history.events {
        end = end.max(e.time);
        if e.op == OpKind::Nemesis {
            // A crashed or hung client asks no more.
            if let Some(i) = e.injected() {
                let ended = i
                    .what
                    .client_step()
                    .is_some_and(ClientStep::ends_the_client);
                if let Some(c) = i.client_target().filter(|_| ended) {
                    asking.remove(&c);
                }
            }
            continue;
        }
        let Process::Client(c) = e.process else {
            continue;
        };
        if e.op != OpKind::Acquire {
            continue;
        }
        match e.phase {
            Phase::Invoke => {
                askers.insert(c);
                asking.entry(c).or_insert(Asking {
                    since: e.time,
                    passed: 0,
                });
            }
            Phase::Ok => {
                if let Some(a) = asking.remove(&c) {
                    note(a.passed, e.time - a.since, true, c);
                }
                for (_, a) in asking.iter_mut() {
                    a.passed += 1;
                }
            }
            Phase::Fail | Phase::Info => {}
        }
    }
    for (c, a) in asking {
        note(a.passed, end.saturating_sub(a.since), false, c);
    }
    let (passed, asked, granted, c) = best?;
    let ms = asked as f64 / 1e6;
    let clients = askers.len();
    let then = if granted {
        "before it was granted"
    } else {
        "and was still asking when the run ended"
    };
    let summary = format!(
        "c{c} asked for {ms:.0} ms and saw the lock granted {passed} time(s) to others {then} \
         ({clients} client(s) asked; a lock granting in request order allows {}) — the \
         longest wait this run saw, a bounded observation, not a proof",
        clients.saturating_sub(1)
    );
    Some(Overtaking {
        client: format!("c{c}"),
        grants_to_others: passed,
        asked_ns: asked,
        granted,
        clients,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Backend, Event, Header};
    use serde_json::json;

    fn history(events: Vec<Event>) -> History {
        History::of("test", Header::new("t", Backend::Redis), events)
    }

    fn acquire(c: u32, phase: Phase, t: u64) -> Event {
        Event::new(Process::Client(c), OpKind::Acquire, phase, t)
    }

    /// c0 retries while c1 takes the lock five times; then c0 is granted.
    #[test]
    fn a_retrying_client_passed_over_by_every_grant_of_another() {
        let mut events = vec![acquire(0, Phase::Invoke, 0)];
        for k in 0..5 {
            let t = 10 + 10 * k;
            events.extend([
                acquire(1, Phase::Invoke, t),
                acquire(1, Phase::Ok, t + 1),
                acquire(0, Phase::Fail, t + 2),
                acquire(0, Phase::Invoke, t + 3),
            ]);
        }
        events.push(acquire(0, Phase::Ok, 100));
        let w = longest_wait(&history(events)).expect("a wait");
        assert_eq!((w.client.as_str(), w.grants_to_others), ("c0", 5));
        assert_eq!((w.asked_ns, w.granted, w.clients), (100, true, 2));
        assert!(w.past_a_queue(), "a queue allows 1");
        assert!(w.summary.contains("not a proof"), "{}", w.summary);
    }

    /// Two clients taking turns in order: each waits through one grant of the other.
    #[test]
    fn turns_in_order_stay_within_a_queue() {
        let mut events = Vec::new();
        for k in 0..4u64 {
            let (me, other) = ((k % 2) as u32, ((k + 1) % 2) as u32);
            let t = 10 * k;
            events.extend([
                acquire(other, Phase::Invoke, t),
                acquire(me, Phase::Ok, t + 5),
            ]);
        }
        let w = longest_wait(&history(events)).expect("a wait");
        assert_eq!(w.grants_to_others, 1);
        assert!(!w.past_a_queue());
    }

    /// A crashed client asks no more; a wait open at the end is counted as still asking.
    #[test]
    fn a_crashed_client_stops_asking_and_an_open_wait_counts_to_the_end() {
        let mut crash = Event::new(Process::NEMESIS, OpKind::Nemesis, Phase::Info, 5);
        crash.value = Some(json!({"fault": "client-crash", "target": "c0"}).into());
        let events = vec![
            acquire(0, Phase::Invoke, 0),
            acquire(2, Phase::Invoke, 1),
            crash,
            acquire(1, Phase::Invoke, 6),
            acquire(1, Phase::Ok, 7),
            acquire(1, Phase::Invoke, 8),
            acquire(1, Phase::Ok, 9),
            acquire(2, Phase::Fail, 40),
        ];
        let w = longest_wait(&history(events)).expect("a wait");
        assert_eq!((w.client.as_str(), w.grants_to_others), ("c2", 2));
        assert_eq!((w.asked_ns, w.granted), (39, false));
        assert!(w.summary.contains("still asking"), "{}", w.summary);
        assert_eq!(
            longest_wait(&history(vec![acquire(0, Phase::Invoke, 0)])),
            None
        );
    }
}
