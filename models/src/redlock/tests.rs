//! What a split does to Redlock's clients: the side without a majority is refused.

use stateright::Model;

use crate::check::Narrate;
use crate::kernel::Budget;
use crate::registry::Fault;

use super::model::{RedlockModel, RedlockState, RlAction, RlPhase};
use RlAction::{Decide, Heal, Send, Split};

/// Three nodes, lease 2, drift 1, two attempts each, time to t=4: the small Redlock the
/// unit tests play steps on.
pub(super) fn small(clients: usize, faults: Budget, restart_delay: u64) -> RedlockModel {
    RedlockModel {
        nodes: 3,
        clients,
        ttl: 2,
        drift: 1,
        attempts: 2,
        faults,
        restart_delay,
        persistent: false,
        horizon: 4,
        tail: 0,
        repeat: false,
        protocol: None,
        quorum: None,
    }
}

fn model() -> RedlockModel {
    small(2, Budget::of(&[(Fault::Partition, 1)]), 0)
}

fn play(m: &RedlockModel, steps: &[RlAction]) -> RedlockState {
    let mut s = m.init_states().remove(0);
    for a in steps {
        s = m
            .next_state(&s, a.clone())
            .unwrap_or_else(|| panic!("{a:?} not enabled in {s:?}"));
    }
    s
}

#[test]
fn the_minority_side_is_refused_and_the_majority_side_granted() {
    let m = model();
    // c0 with redis0, redis1; c1 alone with redis2.
    let split = Split(0b011, 0b01);
    let s = play(&m, &[split.clone(), Send(1, 0), Send(1, 1), Send(1, 2)]);
    let got = |s: &RedlockState, c: u8| s.nodes.iter().filter(|n| n.got & 1 << c != 0).count();
    assert_eq!(got(&s, 1), 1, "only redis2 answered c1");
    let s = play(&m, &[split, Send(1, 0), Send(1, 1), Send(1, 2), Decide(1)]);
    assert_eq!(s.clients[1].phase, RlPhase::Acquiring, "c1 retries");
    let s2 = m
        .next_state(&s, Send(0, 0))
        .and_then(|s| m.next_state(&s, Send(0, 1)))
        .and_then(|s| m.next_state(&s, Send(0, 2)))
        .and_then(|s| m.next_state(&s, Decide(0)))
        .expect("c0's attempt");
    assert_eq!(
        s2.clients[0].phase,
        RlPhase::Critical,
        "c0 holds redis0, redis1"
    );
    assert!(
        m.describe_state(&s2)
            .iter()
            .any(|l| l.starts_with("redis2") && l.ends_with("cut off from c0")),
        "{:?}",
        m.describe_state(&s2)
    );
}

#[test]
fn a_split_is_offered_once_per_partition_and_heals() {
    let m = model();
    let s = play(&m, &[Split(0b001, 0b10)]);
    // One split at a time, from the budget of one.
    assert!(m.next_state(&s, Split(0b011, 0b01)).is_none());
    // A node mask without node 0 names the same split from the other side.
    assert!(m
        .next_state(&m.init_states()[0], Split(0b110, 0b01))
        .is_none());
    let healed = m.next_state(&s, Heal).expect("heals");
    assert!(healed.nodes.iter().all(|n| n.cut == 0));
    assert_eq!(
        m.describe_action(&m.init_states()[0], &Split(0b001, 0b10)),
        "the network splits: redis0 with c1 | redis1, redis2 with c0"
    );
    // All nodes on one side: c1 is cut off from every one of them.
    let alone = play(&m, &[Split(0b111, 0b01)]);
    assert!(alone.nodes.iter().all(|n| n.cut == 0b10));
    assert_eq!(
        m.describe_action(&m.init_states()[0], &Split(0b111, 0b01)),
        "the network splits: redis0, redis1, redis2 with c0 | no node with c1"
    );
    // A split that cuts no one is not offered.
    assert!(m
        .next_state(&m.init_states()[0], Split(0b111, 0b11))
        .is_none());
}
