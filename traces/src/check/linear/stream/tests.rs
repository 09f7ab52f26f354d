//! The streamed verdict against the search's, which stays the oracle.

use std::sync::Arc;

use locklab_models::spec::{
    LockInput, LockOutput, LockSpec, RegisterInput, RegisterOutput, RegisterSpec, Spec,
};
use proptest::prelude::*;

use super::{decide, Streamed};
use crate::check::linear::search::{self, Budget, Ended};
use crate::check::linear::LinOp;

/// One client's operations: each `(gap before its call, its duration, choice of input,
/// choice of answer)`; a choice of answer 0 is "unknown", after which the client stops.
type Plan = Vec<Vec<(u64, u64, u8, u8)>>;

fn plan() -> impl Strategy<Value = Plan> {
    prop::collection::vec(
        prop::collection::vec((0u64..6, 1u64..8, 0u8..6, 0u8..12), 1..6),
        1..5,
    )
}

/// The operations of `plan`, each input and answer chosen by `pick`.
fn ops<S: Spec>(
    spec: S,
    plan: &Plan,
    pick: impl Fn(u32, u8, u8) -> (S::Input, S::Output),
) -> Vec<LinOp<S>> {
    let spec = Arc::new(spec);
    let mut out = Vec::new();
    for (c, steps) in plan.iter().enumerate() {
        let mut t = 0;
        for &(gap, len, input, answer) in steps {
            let (i, o) = pick(c as u32, input, answer);
            t += gap;
            let unknown = answer == 0;
            out.push(LinOp {
                spec: spec.clone(),
                input: i,
                output: (!unknown).then_some(o),
                call: t,
                ret: (!unknown).then_some(t + len),
                client: c as u32,
                line: out.len() + 2,
            });
            if unknown {
                break;
            }
            t += len;
        }
    }
    out.sort_by_key(|o| o.call);
    out
}

fn lock_ops(plan: &Plan) -> Vec<LinOp<LockSpec>> {
    ops(LockSpec::default(), plan, |c, input, answer| {
        let owner = u64::from(c);
        match input % 3 {
            0 | 1 => (
                LockInput::Acquire {
                    owner,
                    lease: (input > 2).then_some(4 + u64::from(input) * 3),
                },
                if answer % 2 == 0 {
                    LockOutput::Granted(None)
                } else {
                    LockOutput::Busy
                },
            ),
            _ => (
                LockInput::Release { owner },
                if answer % 3 == 0 {
                    LockOutput::NotHeld
                } else {
                    LockOutput::Released
                },
            ),
        }
    })
}

fn register_ops(plan: &Plan) -> Vec<LinOp<RegisterSpec>> {
    ops(RegisterSpec::default(), plan, |_, input, answer| {
        let v = i64::from(answer % 3);
        match input % 3 {
            0 => (
                RegisterInput::Read,
                RegisterOutput::Value((answer % 4 != 3).then_some(v)),
            ),
            1 => (RegisterInput::Write(v), RegisterOutput::Written),
            _ => (
                RegisterInput::Cas {
                    from: i64::from(input % 2),
                    to: v,
                },
                if answer % 2 == 0 {
                    RegisterOutput::CasOk
                } else {
                    RegisterOutput::CasFailed
                },
            ),
        }
    })
}

/// The two agree, or the stream stepped aside (too wide) for the search to decide.
fn agree<S: Spec>(ops: &[LinOp<S>]) -> Result<(), TestCaseError> {
    let searched = search::decide(ops, &Budget::unlimited());
    match (decide(ops, &Budget::unlimited()), searched) {
        (Streamed::Linearizable, Ended::Linearizable)
        | (Streamed::Illegal(_), Ended::Illegal(_))
        | (Streamed::Wide, _) => Ok(()),
        (streamed, searched) => Err(TestCaseError::fail(format!(
            "streamed {streamed:?}, searched {searched:?}: {:#?}",
            ops.iter().map(LinOp::describe).collect::<Vec<_>>()
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lock_histories_get_the_searchs_verdict(plan in plan()) {
        agree(&lock_ops(&plan))?;
    }

    #[test]
    fn register_histories_get_the_searchs_verdict(plan in plan()) {
        agree(&register_ops(&plan))?;
    }
}

/// A lock taken and given back by turns, each grant refused to the others meanwhile:
/// `rounds` rounds of `clients` clients.
fn busy_lock(rounds: u64, clients: u32) -> Vec<LinOp<LockSpec>> {
    let spec = Arc::new(LockSpec::default());
    let mut out = Vec::new();
    let op = |input, output, call, ret, client| LinOp {
        spec: spec.clone(),
        input,
        output: Some(output),
        call,
        ret: Some(ret),
        client,
        line: 0,
    };
    for r in 0..rounds {
        let t = r * 100;
        let holder = (r % u64::from(clients)) as u32;
        let owner = u64::from(holder);
        out.push(op(
            LockInput::Acquire { owner, lease: None },
            LockOutput::Granted(None),
            t,
            t + 10,
            holder,
        ));
        for c in (0..clients).filter(|&c| c != holder) {
            out.push(op(
                LockInput::Acquire {
                    owner: u64::from(c),
                    lease: None,
                },
                LockOutput::Busy,
                t + 5 + u64::from(c),
                t + 30 + u64::from(c),
                c,
            ));
        }
        out.push(op(
            LockInput::Release { owner },
            LockOutput::Released,
            t + 80,
            t + 90,
            holder,
        ));
    }
    out
}

/// Turns the last round's release into another client's grant: the holder never gives
/// the lock back and c3 is granted after it. Returns that operation's index.
fn with_late_double_grant(ops: &mut [LinOp<LockSpec>]) -> usize {
    let last = ops.len() - 1;
    ops[last].input = LockInput::Acquire {
        owner: 3,
        lease: None,
    };
    ops[last].output = Some(LockOutput::Granted(None));
    ops[last].client = 3;
    last
}

/// A long history streams to the search's verdict, and a grant while the lock is held,
/// at its end, is found there.
#[test]
fn a_long_lock_history_streams_and_its_late_double_grant_is_found() {
    let mut ops = busy_lock(2000, 16);
    assert_eq!(decide(&ops, &Budget::unlimited()), Streamed::Linearizable);
    let last = with_late_double_grant(&mut ops);
    assert_eq!(decide(&ops, &Budget::unlimited()), Streamed::Illegal(last));
    assert!(matches!(
        search::decide(&ops, &Budget::unlimited()),
        Ended::Illegal(_)
    ));
}

/// A partition the stream proves illegal stays illegal when the search for its longest
/// order runs out of budget, and says it has no order, so no report redoes that search.
#[test]
fn a_proven_violation_outlives_the_searchs_budget() {
    let mut ops = busy_lock(200, 8);
    let last = with_late_double_grant(&mut ops);
    let starved = Budget {
        deadline: None,
        max_bytes: 0,
    };
    match crate::check::linear::decide(&[ops], &starved) {
        crate::check::linear::LinResult::Illegal(ill) => {
            assert!(!ill.order_known);
            assert_eq!(ill.stuck, vec![last]);
        }
        other => panic!("expected illegal, got {other:?}"),
    }
}
