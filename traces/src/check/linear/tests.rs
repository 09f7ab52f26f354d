//! The cases of [`super`].

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::spec::{RegisterInput, RegisterOutput, RegisterSpec};

use super::porcupine::{round, to_porcupine};
use super::{check, Budget, LinOp, LinResult, Round};

fn op(input: RegisterInput, output: RegisterOutput, call: u64, ret: u64) -> LinOp<RegisterSpec> {
    LinOp {
        spec: Arc::new(RegisterSpec::default()),
        input,
        output: Some(output),
        call,
        ret: Some(ret),
        client: call as u32,
        line: call as usize,
    }
}

/// Linearizable, but not in any time a test can wait: 24 overlapping writes, then a
/// read of the first one. porcupine-rs tries that write first and searches every
/// order of the others behind it before it puts the write last.
fn endless() -> Vec<LinOp<RegisterSpec>> {
    let mut ops: Vec<_> = (0..24)
        .map(|v| {
            op(
                RegisterInput::Write(v),
                RegisterOutput::Written,
                v as u64,
                100,
            )
        })
        .collect();
    ops.push(op(
        RegisterInput::Read,
        RegisterOutput::Value(Some(0)),
        200,
        201,
    ));
    ops
}

/// Illegal at once: a read of a value never written.
fn illegal() -> Vec<LinOp<RegisterSpec>> {
    vec![op(
        RegisterInput::Read,
        RegisterOutput::Value(Some(7)),
        1,
        2,
    )]
}

#[test]
fn a_deadline_abandons_a_running_search_and_gives_unknown() {
    let start = Instant::now();
    let budget = Budget {
        deadline: Some(Instant::now() + Duration::from_millis(50)),
        max_bytes: usize::MAX,
    };
    let result = check(&[endless()], &budget);
    assert!(matches!(result, LinResult::Unknown(_)), "{result:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// porcupine-rs's cache cannot be measured, so the budget watches the process: a
/// search whose cache grows past it is abandoned with "unknown", not left to take
/// the machine down.
#[test]
fn a_memory_budget_abandons_a_growing_search_and_gives_unknown() {
    let budget = Budget {
        deadline: Some(Instant::now() + Duration::from_secs(120)),
        max_bytes: 8 << 20,
    };
    let result = check(&[endless()], &budget);
    assert!(
        matches!(result, LinResult::Unknown(super::Exhausted::Memory)),
        "{result:?}"
    );
}

#[test]
fn an_illegal_partition_abandons_the_search_running_beside_it() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        // One worker searches the endless partition first and never gets further.
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    // On its own thread, so that a search that cannot be stopped fails the test
    // instead of hanging it.
    std::thread::spawn(move || {
        let abandon = Arc::new(AtomicBool::new(false));
        let converted = [
            to_porcupine(&endless(), Some(&abandon)),
            to_porcupine(&illegal(), Some(&abandon)),
        ];
        // Round two's search to the end, as if both had outlived their first slice.
        let ended = round(&converted, &[0, 1], None, &Budget::unlimited(), &abandon);
        let _ = tx.send(matches!(ended, Round::Illegal(1)));
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok(true));
}

#[test]
fn an_illegal_partition_is_found_beside_an_endless_one() {
    let start = Instant::now();
    match check(&[endless(), illegal()], &Budget::unlimited()) {
        LinResult::Illegal(ill) => assert_eq!(ill.ops.len(), 1),
        other => panic!("{other:?}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}
