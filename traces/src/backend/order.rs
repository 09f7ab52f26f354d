//! Whether grants follow the order in which requests reached the lock service, where
//! the service numbers them (a ZooKeeper sequential node's `czxid`, an etcd lock key's
//! create revision): the observable side of the models' `fifo` promise.
//!
//! Each backend reads its requests' numbers from the `command` events; this walks the
//! grants in order and looks for one that went to a later request while an earlier one
//! still waited. A number names one request for good (a node deleted and made again
//! gets a new `czxid`, a key put again a new create revision), so a request numbered
//! lower than one already granted was made before that grant and still stood at it:
//! the lock passed it over. That is a proof, and only a bounded observation when none
//! is found. A grant is counted only where its client's request is known: a request
//! sent with no reply (its number unknown) makes the client's number unknown until a
//! reply shows the next one.

use std::collections::BTreeMap;

use crate::check::report::{Finding, OpRef, Verdict};
use crate::format::OpKind;
use crate::ops::{Outcome, Paired};

/// The name of the finding.
pub const NAME: &str = "request order";

/// What a client's lock request showed of its place in the service's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The client (`c0` is 0).
    pub client: u32,
    /// Its number in the service's order (`None`: sent, but its number is unknown).
    pub position: Option<u64>,
    /// When the reply that showed it came (when it was sent, for an unknown one).
    pub at_ns: u64,
    /// The history line of the request.
    pub line: usize,
}

/// A grant and the request it went to.
struct Grant {
    client: u32,
    position: u64,
    line: usize,
    request_line: usize,
}

/// The finding for `requests` (in any order) and the history's grants; `None` when no
/// grant can be tied to a numbered request. `numbered` names the numbers (`czxid`).
pub fn check(requests: &[Request], paired: &Paired, numbered: &str) -> Option<Finding> {
    let mut requests: Vec<&Request> = requests.iter().collect();
    requests.sort_by_key(|r| r.at_ns);
    let mut grants: Vec<(u64, u32, usize)> = paired
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Acquire && o.outcome == Outcome::Ok)
        .filter_map(|o| Some((o.ret()?, o.process, o.completion.as_ref()?.0)))
        .collect();
    grants.sort_unstable();
    let mut latest: BTreeMap<u32, (Option<u64>, usize)> = BTreeMap::new();
    let mut next = requests.iter().peekable();
    let mut tied = Vec::new();
    for (t, client, line) in grants {
        while let Some(r) = next.next_if(|r| r.at_ns <= t) {
            latest.insert(r.client, (r.position, r.line));
        }
        if let Some(&(Some(position), request_line)) = latest.get(&client) {
            tied.push(Grant {
                client,
                position,
                line,
                request_line,
            });
        }
    }
    if tied.is_empty() {
        return None;
    }
    let mut first_of_max: Option<&Grant> = None;
    for g in &tied {
        match first_of_max {
            Some(m) if g.position < m.position && g.client != m.client => {
                let summary = format!(
                    "c{}'s request ({numbered} {}) came before c{}'s ({numbered} {}), yet c{} was granted first: the lock passed over a waiting request",
                    g.client, g.position, m.client, m.position, m.client
                );
                let mut f =
                    Finding::new(NAME, Verdict::Violation, summary).stat("grants", tied.len());
                f.ops = vec![
                    op(
                        g.client,
                        g.request_line,
                        format!("request, {numbered} {}", g.position),
                    ),
                    op(
                        m.client,
                        m.request_line,
                        format!("request, {numbered} {}", m.position),
                    ),
                    op(m.client, m.line, "granted first".into()),
                    op(g.client, g.line, "granted after it".into()),
                ];
                return Some(f);
            }
            Some(m) if g.position <= m.position => {}
            _ => first_of_max = Some(g),
        }
    }
    Some(
        Finding::new(
            NAME,
            Verdict::Ok,
            format!(
                "{} grants, each to the earliest request still waiting ({numbered} order) — as far as this history goes",
                tied.len()
            ),
        )
        .stat("grants", tied.len()),
    )
}

fn op(client: u32, line: usize, description: String) -> OpRef {
    OpRef {
        line,
        process: format!("c{client}"),
        description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Event, History, Phase, Process};
    use crate::ops::pair;

    /// Grants of `clients` at 10, 20, 30… ms.
    fn granted(clients: &[u32]) -> History {
        let mut h = History::default();
        let mut line = 1;
        for (i, &c) in clients.iter().enumerate() {
            let t = (i as u64 + 1) * 10_000_000;
            for (phase, at) in [(Phase::Invoke, t - 1), (Phase::Ok, t)] {
                let mut e = Event::new(Process::Client(c), OpKind::Acquire, phase, at);
                e.key = Some("lock".into());
                h.events.push((line, e));
                line += 1;
            }
        }
        h
    }

    fn asked(client: u32, position: Option<u64>, ms: u64) -> Request {
        Request {
            client,
            position,
            at_ns: ms * 1_000_000,
            line: 100 + client as usize,
        }
    }

    #[test]
    fn grants_in_request_order_keep_it() {
        let h = granted(&[0, 1, 2]);
        let paired = pair(&h).expect("pairs");
        let requests = [
            asked(0, Some(5), 1),
            asked(1, Some(6), 2),
            asked(2, Some(7), 3),
        ];
        let f = check(&requests, &paired, "czxid").expect("a finding");
        assert_eq!(f.verdict, Verdict::Ok, "{}", f.summary);
        assert_eq!(f.stats.get("grants"), Some(&3.into()));
    }

    /// c1 asked first (6) but c2 (7) was granted before it: proven.
    #[test]
    fn a_grant_over_an_earlier_request_is_shown() {
        let h = granted(&[0, 2, 1]);
        let paired = pair(&h).expect("pairs");
        let requests = [
            asked(0, Some(5), 1),
            asked(1, Some(6), 2),
            asked(2, Some(7), 3),
        ];
        let f = check(&requests, &paired, "czxid").expect("a finding");
        assert_eq!(f.verdict, Verdict::Violation);
        assert!(
            f.summary
                .starts_with("c1's request (czxid 6) came before c2's (czxid 7)"),
            "{}",
            f.summary
        );
        assert_eq!(f.ops.len(), 4);
    }

    /// A request whose reply was lost leaves the client's number unknown: its grant is
    /// not held against the order, though its last known number is low.
    #[test]
    fn an_unknown_request_proves_nothing() {
        let h = granted(&[0, 2, 1]);
        let paired = pair(&h).expect("pairs");
        let requests = [
            asked(0, Some(5), 1),
            asked(1, Some(1), 2),
            asked(2, Some(7), 3),
            asked(1, None, 4),
        ];
        let f = check(&requests, &paired, "czxid").expect("a finding");
        assert_eq!(f.verdict, Verdict::Ok, "{}", f.summary);
        assert_eq!(f.stats.get("grants"), Some(&2.into()));
    }
}
