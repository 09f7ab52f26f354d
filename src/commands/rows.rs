//! The catalog's rows (or those `--only` names) through one function, on every core:
//! `matrix` and `models --progress` check rows that do not depend on each other.

use std::sync::atomic::{AtomicUsize, Ordering};

use locklab_models::catalog::{find, scenarios, CatalogError, Scenario};
use locklab_models::check::default_threads;

/// The catalog's rows whose ids are in `only` (every row when it is empty), in catalog
/// order; an id that names no row is the catalog's error, which names the closest ids.
pub fn rows_of(only: &[String]) -> Result<Vec<&'static Scenario>, CatalogError> {
    for id in only {
        find(id)?;
    }
    Ok(scenarios()
        .iter()
        .filter(|s| only.is_empty() || only.iter().any(|o| o == s.id.name()))
        .collect())
}

/// `work` on each of `rows`, each core taking the next row in turn; the results in
/// the rows' order. `bar` names the row being worked on.
pub fn each_row<T: Send>(
    rows: Vec<&'static Scenario>,
    bar: &indicatif::ProgressBar,
    work: impl Fn(&Scenario) -> T + Sync,
) -> Vec<(&'static Scenario, T)> {
    let all = rows;
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
