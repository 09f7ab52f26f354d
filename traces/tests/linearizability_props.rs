//! Property tests of the whole pipeline (history → pairing → porcupine-rs search):
//! - histories produced by running a spec under random concurrency are accepted;
//! - after a random corruption of one answer, a small history is rejected exactly when
//!   a brute-force search over every order says it is not linearizable.

use crate::common::*;
use locklab_models::spec::{LockSpec, RegisterSpec};
use locklab_traces::check::{Selection, Verdict};
use locklab_traces::format::ResourceSpec;
use proptest::prelude::*;

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn simulated_register_histories_are_accepted(clients in 1u32..5, choices in prop::collection::vec(any::<u8>(), 0..160)) {
        let ops = simulate(&RegisterSpec::default(), clients, 40, &choices, register_input);
        let h = history(register_events(&ops), Some(ResourceSpec::CasRegister { initial: None }));
        if !h.events.is_empty() {
            prop_assert_eq!(verdict(&h), Verdict::Ok);
        }
    }

    #[test]
    fn simulated_lock_histories_are_accepted(clients in 1u32..5, choices in prop::collection::vec(any::<u8>(), 0..160)) {
        let ops = simulate(&LockSpec::default(), clients, 40, &choices, lock_input);
        let h = history(lock_events(&ops), None);
        if !h.events.is_empty() {
            // Mutual exclusion of the clients' beliefs is not a property of a leased lock
            // (that is the lesson of every pause scenario): only the spec is asserted.
            prop_assert_eq!(verdict_of(&h, Selection::Lock), Verdict::Ok);
        }
    }

    #[test]
    fn corrupted_register_histories_match_the_oracle(clients in 1u32..4, choices in prop::collection::vec(any::<u8>(), 4..40), which in 0usize..8, how in any::<u8>()) {
        let mut ops = simulate(&RegisterSpec::default(), clients, 7, &choices, register_input);
        corrupt_register(&mut ops, which, how);
        let h = history(register_events(&ops), Some(ResourceSpec::CasRegister { initial: None }));
        if !h.events.is_empty() {
            let expected = oracle(&lin_ops(&RegisterSpec::default(), &ops));
            prop_assert_eq!(verdict(&h) == Verdict::Ok, expected);
        }
    }

    #[test]
    fn corrupted_lock_histories_match_the_oracle(clients in 1u32..4, choices in prop::collection::vec(any::<u8>(), 4..40), which in 0usize..8, how in any::<u8>()) {
        let spec = LockSpec::default();
        let mut ops = simulate(&spec, clients, 7, &choices, lock_input);
        corrupt_lock(&mut ops, which, how);
        let h = history(lock_events(&ops), None);
        if ops.iter().any(|o| o.output.is_some()) {
            let expected = oracle(&lin_ops(&spec, &ops));
            let got = verdict_of(&h, Selection::Lock);
            prop_assert_eq!(got == Verdict::Ok, expected);
        }
    }
}

/// The corruption tests are only worth something if corruptions are sometimes caught
/// and sometimes harmless: check both happen, on a fixed sweep of inputs.
#[test]
fn corruptions_are_sometimes_caught_and_sometimes_harmless() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut caught, mut harmless) = (0, 0);
    for _ in 0..400 {
        let choices: Vec<u8> = (0..30).map(|_| next() as u8).collect();
        let mut ops = simulate(&LockSpec::default(), 2, 7, &choices, lock_input);
        corrupt_lock(&mut ops, next() as usize, next() as u8);
        let h = history(lock_events(&ops), None);
        if ops.iter().all(|o| o.output.is_none()) {
            continue;
        }
        let expected = oracle(&lin_ops(&LockSpec::default(), &ops));
        assert_eq!(
            verdict_of(&h, Selection::Lock) == Verdict::Ok,
            expected,
            "{ops:?}"
        );
        if expected {
            harmless += 1;
        } else {
            caught += 1;
        }
    }
    assert!(
        caught > 50 && harmless > 10,
        "caught {caught}, harmless {harmless}"
    );
}
