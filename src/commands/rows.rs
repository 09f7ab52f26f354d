//! Every catalog row through one function, on every core: `matrix` and
//! `models --progress` check rows that do not depend on each other.

use std::sync::atomic::{AtomicUsize, Ordering};

use locklab_models::catalog::{scenarios, Scenario};
use locklab_models::check::default_threads;

/// `work` on every catalog row, each core taking the next row in turn; the results in
/// catalog order. `bar` names the row being worked on.
pub fn each_row<T: Send>(
    bar: &indicatif::ProgressBar,
    work: impl Fn(&Scenario) -> T + Sync,
) -> Vec<(Scenario, T)> {
    let all = scenarios();
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..default_threads())
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(s) = all.get(i) else { break mine };
                        bar.set_message(format!("checking {}", s.id));
                        mine.push((i, work(s)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    all.into_iter()
        .zip(done)
        .map(|(s, (_, t))| (s, t))
        .collect()
}
