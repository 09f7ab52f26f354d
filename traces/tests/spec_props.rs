//! Every spec against the whole pipeline (events → pairing → conversion → partitioning →
//! porcupine-rs search) and a brute-force oracle:
//! - a history simulated from a correct run, with lost answers, timeouts, requests that
//!   land after their client gave up and operations that never return, passes every
//!   check that runs (a correct run has nothing to report);
//! - after one answer or one operation's window is corrupted, the verdict is Ok exactly
//!   when the oracle finds an order.
//!
//! The Redis node is not reachable through `check_history`, so it goes to the search
//! directly, partitioned by key, against the oracle on the whole node.
//!
//! Default case counts (300 per property) keep the property files to seconds. The long
//! run, not part of the default test run: 50 000 cases per property, about two minutes
//! of tests on two busy cores after the release build (three minutes in all):
//!
//! ```text
//! PROPTEST_CASES=50000 cargo test -p locklab-traces --release --test it -- spec_props:: client_props:: linearizability_props::
//! ```

#[path = "spec_props/harness.rs"]
mod harness;
#[path = "spec_props/workloads.rs"]
mod workloads;

use crate::common::*;
use harness::*;
use locklab_traces::check::linear::LinResult;
use proptest::prelude::*;
use workloads::*;

fn keys<W: Clone + std::fmt::Debug>(
    inner: impl Strategy<Value = W>,
) -> impl Strategy<Value = Keys<W>> {
    (inner, 1u8..4).prop_map(|(inner, keys)| Keys { inner, keys })
}

fn lock_workload() -> impl Strategy<Value = Lock> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(reentrant, leases, shared_owners)| {
        Lock {
            reentrant,
            leases,
            shared_owners,
        }
    })
}

fn register_workload() -> impl Strategy<Value = Register> {
    (any::<bool>(), prop::option::of(0i64..2), any::<bool>()).prop_map(
        |(cas, initial, declared)| Register {
            cas,
            initial,
            declared,
        },
    )
}

fn inventory_workload() -> impl Strategy<Value = Inventory> {
    (0i64..5, any::<bool>()).prop_map(|(initial, decrements_only)| Inventory {
        initial,
        decrements_only,
    })
}

fn choices(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn simulated_registers_pass(w in keys(register_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_registers_match_the_oracle(w in keys(register_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_kv_maps_pass(keys in 1u8..4, clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&Kv { keys }, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_kv_maps_match_the_oracle(keys in 1u8..4, clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&Kv { keys }, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_inventories_pass(w in keys(inventory_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_inventories_match_the_oracle(w in keys(inventory_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_locks_pass(w in keys(lock_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_locks_match_the_oracle(w in keys(lock_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_mutexes_pass(w in keys(Just(Mutex)), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_mutexes_match_the_oracle(w in keys(Just(Mutex)), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_redis_nodes_pass(clients in 1u32..5, choices in choices(120), faults in faults()) {
        let ops = simulate_workload(&Redis, clients, 30, &choices, faults);
        let v = Redis.verdict(&ops, choices.len() % 2 == 1);
        prop_assert!(matches!(v, LinResult::Ok), "{:#?}\n{:#?}", v, ops);
    }

    #[test]
    fn corrupted_redis_nodes_match_the_oracle(clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        let mut ops = simulate_workload(&Redis, clients, 8, &choices, faults);
        corrupt(&Redis, &mut ops, which, how);
        let expected = oracle(&lin_ops(&Redis.spec(), &ops));
        let v = Redis.verdict(&ops, choices.len() % 2 == 1);
        prop_assert_eq!(matches!(v, LinResult::Ok), expected, "{:#?}\n{:#?}", v, ops);
    }
}

/// What a sample of corrupted histories of a workload covers: how many the oracle
/// rejects and accepts, and how many answers were lost, timed out, landed late or never
/// came.
#[derive(Debug, Default)]
struct Covered {
    rejected: usize,
    accepted: usize,
    lost: usize,
    timed_out: usize,
    late: usize,
    never: usize,
}

fn cover<W: Workload + std::fmt::Debug>(workloads: impl Strategy<Value = W>) -> Covered {
    let cases = (
        workloads,
        1u32..5,
        choices(48),
        faults(),
        0usize..8,
        any::<u8>(),
    );
    let mut c = Covered::default();
    for (w, clients, choices, faults, which, how) in sample(cases, 300) {
        let mut ops = simulate_workload(&w, clients, 8, &choices, faults);
        for op in &ops {
            match (op.ret, op.output.is_some() || op.refused, op.effect) {
                (None, _, _) => c.never += 1,
                (Some(_), false, Some(e)) if e < op.call => unreachable!(),
                (Some(r), false, Some(e)) if e > r => c.late += 1,
                (Some(_), false, Some(_)) => c.lost += 1,
                (Some(_), false, None) => c.timed_out += 1,
                _ => {}
            }
        }
        corrupt(&w, &mut ops, which, how);
        match oracle(&lin_ops(&w.spec(), &ops)) {
            true => c.accepted += 1,
            false => c.rejected += 1,
        }
    }
    c
}

/// The corruption tests are only worth something if corruptions are sometimes caught
/// and sometimes harmless, and the faults all happen: checked on a fixed sample.
#[test]
fn corruptions_and_faults_cover_every_spec() {
    fn enough(name: &str, c: Covered) {
        let all = [c.rejected, c.accepted, c.lost, c.timed_out, c.late, c.never];
        assert!(all.iter().all(|&n| n >= 5), "{name}: {c:?}");
    }
    enough("register", cover(keys(register_workload())));
    enough("kv", cover((1u8..4).prop_map(|keys| Kv { keys })));
    enough("inventory", cover(keys(inventory_workload())));
    enough("lock", cover(keys(lock_workload())));
    enough("mutex", cover(keys(Just(Mutex))));
    enough("redis", cover(Just(Redis)));
}
