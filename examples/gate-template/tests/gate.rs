//! The gate: your lock through the scenarios you chose, on real servers under each
//! scenario's faults, each run's history checked and held against the model's verdict
//! for the same scenario. `cargo test --features backends` fails when your lock keeps
//! less than the model says the scenario's protocol keeps (`locklab models` lists them;
//! `locklab run --list` the ones that run for real). A lock safer than its protocol
//! passes; a run that tested nothing (no critical section, a fault that never fired)
//! fails the test as unknown, with the reason.
#![cfg(feature = "backends")]

use locklab_gate_template::TeamLock;
use locklab_jepsen::agreement::Answer;
use locklab_jepsen::redis::RedisClient;
use locklab_jepsen::{run, CustomLock, RunOptions};

/// The scenarios your lock must get through. Each runs the lock under the scenario's
/// servers and faults; the model says what must hold (`redis-lua`: everything, no
/// fault; `redis-lua-pause`: a holder stopped past its lease shares the lock, as every
/// lease lock does, and still must not release another client's lock).
const SCENARIOS: &[&str] = &["redis-lua", "redis-lua-pause"];

#[test]
fn the_lock_keeps_what_the_model_says_in_every_chosen_scenario() {
    for id in SCENARIOS {
        let lock = CustomLock::of("team lock", |client: &RedisClient, key| {
            Ok(Box::new(TeamLock::new(&client.nodes[0], key)))
        });
        let options = RunOptions {
            lock: Some(lock),
            ..RunOptions::new(id)
        };
        let report = run(&options, &mut |_| {}).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            report.agreement.at_least_as_safe,
            Answer::Yes,
            "{id}: {}\n{:#?}\n{}",
            report.agreement.headline(),
            report.agreement,
            report.timeline.unwrap_or_default().join("\n")
        );
    }
}
