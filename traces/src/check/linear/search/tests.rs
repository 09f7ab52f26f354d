//! The cases of [`super`].

use std::sync::Arc;

use locklab_models::spec::{RegisterInput, RegisterOutput, RegisterSpec};

use super::super::porcupine::to_porcupine;
use super::super::{successors, LinOp, States};
use super::longest;
use super::{decide, Budget, Ended, Exhausted};

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Overlapping register operations with arbitrary answers (so most histories are
/// illegal), some with unknown outcomes, some never returning.
fn history(seed: u64) -> Vec<LinOp<RegisterSpec>> {
    let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let spec = Arc::new(RegisterSpec::default());
    let n = 3 + g.below(9) as usize;
    (0..n)
        .map(|i| {
            let call = g.below(40);
            let (input, output) = match g.below(3) {
                0 => {
                    let v = g.below(4) as i64;
                    let seen = (v > 0).then_some(v);
                    (RegisterInput::Read, RegisterOutput::Value(seen))
                }
                1 => (
                    RegisterInput::Write(g.below(4) as i64),
                    RegisterOutput::Written,
                ),
                _ => {
                    let (from, to) = (g.below(4) as i64, g.below(4) as i64);
                    let out = if g.below(2) == 0 {
                        RegisterOutput::CasOk
                    } else {
                        RegisterOutput::CasFailed
                    };
                    (RegisterInput::Cas { from, to }, out)
                }
            };
            let (output, ret) = match g.below(10) {
                0 => (None, None),
                1 => (None, Some(call + g.below(20))),
                _ => (Some(output), Some(call + g.below(20))),
            };
            LinOp {
                spec: spec.clone(),
                input,
                output,
                call,
                ret,
                client: i as u32,
                line: i + 1,
            }
        })
        .collect()
}

/// The search agrees with porcupine-rs: it finds an order exactly when porcupine-rs
/// does, and on an illegal history its longest order is a valid order as long as the
/// longest porcupine-rs's info variant reports.
#[test]
fn agrees_with_porcupine() {
    let mut illegal = 0;
    for seed in 0..3000 {
        let ops = history(seed);
        let converted = to_porcupine(&ops, None);
        let legal = porcupine_rs::check_operations(&converted);
        let ours = longest(&ops);
        assert_eq!(ours.is_none(), legal, "seed {seed}");
        let Some(order) = ours else { continue };
        illegal += 1;
        let (_, info) = porcupine_rs::check_operations_info(&converted);
        let theirs = info
            .partial_linearizations
            .first()
            .and_then(|seqs| seqs.iter().map(Vec::len).max())
            .unwrap_or(0);
        assert_eq!(order.len(), theirs, "seed {seed}");
        let mut states = States::new();
        for (k, &i) in order.iter().enumerate() {
            states = successors(&states, &ops[i]);
            assert!(!states.is_empty(), "seed {seed}: step {k} fails");
            // Real time: nothing later in the order returned before this was called.
            for &j in &order[k + 1..] {
                assert!(ops[j].ret.is_none_or(|r| r >= ops[i].call), "seed {seed}");
            }
        }
    }
    assert!(illegal > 500, "only {illegal} illegal histories generated");
}

/// With read-only commitment the verdict is still porcupine-rs's, on histories full
/// of reads and failed compare-and-sets; an illegal one's order is still valid.
#[test]
fn committing_read_only_operations_keeps_the_verdict() {
    let (mut legal, mut illegal) = (0, 0);
    for seed in 0..3000 {
        let ops = history(seed);
        let expected = porcupine_rs::check_operations(&to_porcupine(&ops, None));
        match decide(&ops, &Budget::unlimited()) {
            Ended::Linearizable => {
                assert!(expected, "seed {seed}: committed search accepts");
                legal += 1;
            }
            Ended::Illegal(order) => {
                assert!(!expected, "seed {seed}: committed search rejects");
                illegal += 1;
                let mut states = States::new();
                for &i in &order {
                    states = successors(&states, &ops[i]);
                    assert!(!states.is_empty(), "seed {seed}");
                }
            }
            Ended::OutOfBudget(e) => panic!("seed {seed}: {e:?} without a budget"),
        }
    }
    assert!(
        legal > 300 && illegal > 500,
        "legal {legal}, illegal {illegal}"
    );
}

#[test]
fn unanswered_twins_cost_one_subset_per_count() {
    // Twenty-four unanswered `write(2)` (a client's retries into an outage), then a
    // read of a value nobody wrote: illegal. Tried in every subset that is 2^24
    // (set, state) pairs, far past the budget; in call order, 25 per state.
    let spec = Arc::new(RegisterSpec::default());
    let op = |input, output, call, ret, client| LinOp {
        spec: spec.clone(),
        input,
        output,
        call,
        ret,
        client,
        line: client as usize,
    };
    let mut ops = vec![op(
        RegisterInput::Write(1),
        Some(RegisterOutput::Written),
        0,
        Some(5),
        0,
    )];
    for c in 1..=24u32 {
        ops.push(op(
            RegisterInput::Write(2),
            None,
            10 + u64::from(c),
            None,
            c,
        ));
    }
    let budget = Budget {
        deadline: None,
        max_bytes: 64 << 20,
    };
    let read = |v| {
        op(
            RegisterInput::Read,
            Some(RegisterOutput::Value(Some(v))),
            200,
            Some(205),
            99,
        )
    };
    let mut illegal = ops.clone();
    illegal.push(read(4));
    assert!(matches!(decide(&illegal, &budget), Ended::Illegal(_)));
    let mut legal = ops;
    legal.push(read(2));
    assert_eq!(decide(&legal, &budget), Ended::Linearizable);
}

#[test]
fn a_spent_budget_is_no_verdict() {
    // Linearizable and long enough to pass a budget check: sequential write/read
    // pairs. With the budget spent before the start, the answer must be "out of
    // budget", never a verdict.
    let spec = Arc::new(RegisterSpec::default());
    let ops: Vec<LinOp<RegisterSpec>> = (0..3000u64)
        .map(|i| {
            let (input, output) = if i % 2 == 0 {
                (RegisterInput::Write(i as i64), RegisterOutput::Written)
            } else {
                (
                    RegisterInput::Read,
                    RegisterOutput::Value(Some(i as i64 - 1)),
                )
            };
            LinOp {
                spec: spec.clone(),
                input,
                output: Some(output),
                call: 10 * i,
                ret: Some(10 * i + 5),
                client: 0,
                line: i as usize,
            }
        })
        .collect();
    assert_eq!(decide(&ops, &Budget::unlimited()), Ended::Linearizable);
    let spent = Budget {
        deadline: Some(std::time::Instant::now()),
        max_bytes: usize::MAX,
    };
    assert_eq!(decide(&ops, &spent), Ended::OutOfBudget(Exhausted::Time));
    let no_memory = Budget {
        deadline: None,
        max_bytes: 0,
    };
    assert_eq!(
        decide(&ops, &no_memory),
        Ended::OutOfBudget(Exhausted::Memory)
    );
}
