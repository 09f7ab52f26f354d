//! Benchmark: every scenario at default bounds; states, unique states and states/s.
//! Run: `cargo bench --bench models` (release).

use locklab_models::catalog::{check, scenarios, Overrides};
use locklab_models::check::Limits;

fn main() {
    let start = std::time::Instant::now();
    println!(
        "{:<28} {:>10} {:>10} {:>8} {:>12}",
        "scenario", "states", "unique", "secs", "states/s"
    );
    for s in scenarios() {
        let Ok(r) = check(s, &Overrides::default(), Limits::default(), &mut |_| {}) else {
            continue;
        };
        println!(
            "{:<28} {:>10} {:>10} {:>8.3} {:>12.0}",
            s.id,
            r.stats.states,
            r.stats.unique_states,
            r.stats.seconds,
            r.stats.states_per_second()
        );
    }
    println!("total {:.2}s", start.elapsed().as_secs_f64());
}
