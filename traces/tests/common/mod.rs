//! Shared by the traces tests: a simulator that runs a spec under random concurrency
//! (`sim`), a brute-force oracle (`oracle`), the corruption of one answer (`corrupt`),
//! the encoding of simulated operations as locklab events and the checks' verdicts on
//! them (`record`), and hand-written histories built event by event (`build`).

// Each test binary uses its own part of this module.
#![allow(dead_code, unused_imports)]

pub mod build;
mod corrupt;
mod oracle;
mod record;
mod sim;

pub use corrupt::*;
pub use oracle::*;
pub use record::*;
pub use sim::*;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Cases per property: `PROPTEST_CASES` when set (the long run), else `default`. An
/// explicit `cases` in a config would otherwise shadow the variable.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A proptest config that replays and saves failing cases beside the test file: the
/// default looks for a lib.rs above it, finds none under tests/, and then neither
/// replays nor saves them.
pub fn config(default_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default_cases),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// `n` values of `strategy`, the same ones every run: for tests that count what a
/// sample covers.
pub fn sample<S: Strategy>(strategy: S, n: usize) -> Vec<S::Value> {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).expect("a value").current())
        .collect()
}
