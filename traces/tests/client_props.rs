//! The checks that infer beyond a spec (no foreign release, fencing, the overlap of
//! marked critical sections, lost updates of a counter) against simulated runs of lock
//! clients, where what really happened is known:
//! - with a correct lock, clients that keep to their leases and a correct resource,
//!   every check passes;
//! - with a broken lock (it grants to everybody, or releases whoever holds it), reckless
//!   clients or a fence that accepts stale tokens, a check reports a violation only when
//!   one really happened, and the lost updates it counts are those that were lost.
//!
//! Each client loops: acquire → enter → (read → write read + 1, with its token; or, for a
//! stock, sell one unit if there is one: write read − 1) → leave → release; after an
//! acquire whose answer it never got, it releases to be safe.
//! Answers are lost, requests time out and may land later, clients crash.
//!
//! The long run is documented in spec_props.rs.

#[path = "client_props/clients.rs"]
mod clients;
#[path = "client_props/world.rs"]
mod world;

use crate::common::*;
use clients::*;
use locklab_traces::check::{CheckReport, Property, Report, Verdict};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use world::*;

fn find(r: &Report, p: Property) -> Option<&CheckReport> {
    r.checks.iter().find(|c| c.property == p)
}

prop_compose! {
    fn setup(lock: BoxedStrategy<LockKind>, reckless: BoxedStrategy<bool>)(
        (clients, keys, stock) in (1u32..5, 1usize..4, any::<bool>()),
        lease in prop::option::of((5u64..60).prop_map(|l| l * 1000)),
        lock in lock,
        counter in any::<bool>(),
        fence in prop::sample::select(vec![Fence::None, Fence::Correct, Fence::Broken]),
        markers in any::<bool>(),
        reckless in reckless,
        faults in faults(),
        initial in 0i64..4,
    ) -> Setup {
        Setup {
            clients, keys, stock, lease, lock, counter, fence, markers, reckless, faults,
            initial,
        }
    }
}

/// A correct lock, careful clients, a fence that works (or none).
fn correct_setup() -> impl Strategy<Value = Setup> {
    setup(Just(LockKind::Correct).boxed(), Just(false).boxed()).prop_map(|mut s| {
        if s.fence == Fence::Broken {
            s.fence = Fence::Correct;
        }
        s
    })
}

fn any_setup() -> impl Strategy<Value = Setup> {
    setup(
        prop::sample::select(vec![
            LockKind::Correct,
            LockKind::GrantsAll,
            LockKind::BlindRelease,
        ])
        .boxed(),
        any::<bool>().boxed(),
    )
}

/// Every check passes on a correct run, but for what a lease cannot promise: the
/// critical sections the history implies (the clients' beliefs), and sections that
/// hold requests, outlive a lease (the careful client only leaves at its next step);
/// and an update whose read was not fenced may be lost once a lease ran out. Nor can
/// an owner-aware lock tell a stale release of a client's from its current one.
fn correct_runs_pass(setup: &Setup, choices: &[u8]) -> Result<(), TestCaseError> {
    let run = run(setup, choices, 40);
    let h = record(setup, &run);
    let r = auto_report(&h, choices.len() % 2 == 1);
    let mut exempt = Vec::new();
    // A release that lands after its client gave up on it frees that client's next
    // hold (the same owner, to the lock): two clients inside, and updates lost, for real.
    let stale_release = setup.faults.late_effects;
    let lease = setup.lease.is_some();
    // Without an `enter` (none, or every lease ran out first) the sections are derived
    // from grants: beliefs.
    if stale_release || (lease && (setup.counter || run.points.is_empty())) {
        exempt.push(Property::MutualExclusion);
    }
    if stale_release || (lease && setup.counter) {
        exempt.push(Property::ResourceSafety);
    }
    for c in r.checks.iter().filter(|c| !exempt.contains(&c.property)) {
        prop_assert_eq!(
            c.verdict,
            Verdict::Ok,
            "{:#?}\n{}\n{:#?}",
            c,
            show(&h),
            run.truth
        );
    }
    Ok(())
}

/// Whatever the lock, the clients and the fence: a violation is reported only where one
/// happened, and lost updates are counted as they were lost.
fn violations_are_real(setup: &Setup, choices: &[u8]) -> Result<(), TestCaseError> {
    let run = run(setup, choices, 40);
    let h = record(setup, &run);
    let r = auto_report(&h, choices.len() % 2 == 1);
    let truth = &run.truth;
    let says = |p| find(&r, p).map(|c| c.verdict);
    let ctx = || format!("{:#?}\n{}\n{:#?}", r.checks, show(&h), truth);
    // The register itself is always correct, and so is a correct lock.
    let correct = std::iter::once(Property::ResourceLinearizability)
        .chain((setup.lock == LockKind::Correct).then_some(Property::LockLinearizability));
    for p in correct {
        prop_assert_ne!(says(p), Some(Verdict::Violation), "{:?}: {}", p, ctx());
    }
    if says(Property::NoForeignRelease) == Some(Verdict::Violation) {
        prop_assert!(truth.foreign_releases > 0, "{}", ctx());
    }
    if says(Property::Fencing) == Some(Verdict::Violation) {
        prop_assert!(truth.stale_accepted, "{}", ctx());
    }
    // Marked sections, if anybody entered (else they are derived from grants: beliefs).
    if !run.points.is_empty() {
        let overlap = says(Property::MutualExclusion) == Some(Verdict::Violation);
        if overlap {
            prop_assert!(truth.overlap(), "{}", ctx());
        }
        // A section never left is only known to last until its client's last event.
        if truth.sections.iter().all(|s| s.end.is_some()) {
            prop_assert_eq!(overlap, truth.overlap(), "{}", ctx());
        }
    }
    // Each counter is accounted for on its own; the worst one is reported.
    let lost = |k: usize| {
        let c = &truth.counters[k];
        c.writes - (c.last_value - setup.initial).abs()
    };
    let oversold = |k: usize| match setup.stock {
        true => (truth.counters[k].writes - setup.initial).max(0),
        false => 0,
    };
    let accountable: Vec<usize> = (0..setup.keys)
        .filter(|&k| !truth.counters[k].unknown_writes && truth.counters[k].writes > 0)
        .collect();
    match find(&r, Property::ResourceSafety) {
        Some(safety) => {
            let key = match safety.stats.get("key").and_then(|k| k.as_str()) {
                Some(name) => name[1..].parse::<usize>().expect("k<n>"),
                None => {
                    prop_assert_eq!(accountable.len(), 1, "{}", ctx());
                    accountable[0]
                }
            };
            prop_assert!(accountable.contains(&key), "{}", ctx());
            let stat = |name| safety.stats.get(name).and_then(|v| v.as_i64());
            prop_assert_eq!(stat("lost_updates"), Some(lost(key)), "{}", ctx());
            prop_assert_eq!(stat("oversold"), Some(oversold(key)), "{}", ctx());
            let any = accountable.iter().any(|&k| lost(k) > 0 || oversold(k) > 0);
            prop_assert_eq!(safety.verdict == Verdict::Violation, any, "{}", ctx());
        }
        None => prop_assert!(accountable.is_empty() || !setup.counter, "{}", ctx()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn correct_runs_pass_every_check(setup in correct_setup(), choices in prop::collection::vec(any::<u8>(), 0..200)) {
        correct_runs_pass(&setup, &choices)?;
    }

    #[test]
    fn violations_are_reported_only_where_they_happened(setup in any_setup(), choices in prop::collection::vec(any::<u8>(), 0..200)) {
        violations_are_real(&setup, &choices)?;
    }
}

/// The soundness property above is only worth something if the broken runs do get
/// caught: on a fixed sample of runs, each check finds a violation now and then.
#[test]
fn broken_runs_are_sometimes_caught() {
    // Broken locks with a broken fence in front of the counters, to give every check
    // something to find.
    let setups = any_setup().prop_map(|mut s| {
        if s.lock != LockKind::Correct {
            s.counter = true;
            s.fence = Fence::Broken;
        }
        s
    });
    let broken = (setups, prop::collection::vec(any::<u8>(), 0..200));
    let mut caught: Vec<Property> = Vec::new();
    for (setup, choices) in sample(broken, 600) {
        let run = run(&setup, &choices, 40);
        let r = auto_report(&record(&setup, &run), choices.len() % 2 == 1);
        caught.extend(
            r.checks
                .iter()
                .filter(|c| c.verdict == Verdict::Violation)
                .map(|c| c.property),
        );
    }
    for p in [
        Property::NoForeignRelease,
        Property::Fencing,
        Property::ResourceSafety,
        Property::MutualExclusion,
        Property::LockLinearizability,
    ] {
        let n = caught.iter().filter(|&&c| c == p).count();
        assert!(n >= 3, "{p:?} caught {n} times in the sample");
    }
}
