//! `locklab matrix`: every scenario at its default bounds, with its progress promises
//! where its family states them; exit 0 only when every safety verdict equals the
//! expected one (the catalog states no expectation for progress: the checker decides
//! it, and `models/tests/progress.rs` pins what it decides).

use std::time::Instant;

use locklab_models::catalog::{self, Overrides, Verdict};
use locklab_models::check::Limits;
use locklab_models::progress::{self, Kept, Promise};

use crate::bad_input;
use crate::output::{joined, spinner, Format};

use super::rows::{each_row, rows_of};

/// Arguments of `matrix`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only these scenario ids (comma-separated; default: the whole catalog).
    #[arg(long, value_name = "ID,..", value_delimiter = ',')]
    only: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let start = Instant::now();
    let rows = match rows_of(&args.only) {
        Ok(rows) => rows,
        Err(e) => return bad_input(args.format, &e.to_string()),
    };
    let bar = spinner(args.format, "matrix");
    // Rows are independent: each core takes the next one and searches it on one
    // thread, which spends nothing on hand-overs (verdicts and stories do not depend on
    // the thread count).
    let limits = Limits {
        threads: 1,
        ..Limits::default()
    };
    type Row = (catalog::Report, Option<Vec<progress::Verdict>>);
    let done: Vec<(_, Result<Row, String>)> = each_row(rows, &bar, |s| {
        let o = Overrides::default();
        // The safety search and the progress graphs share nothing: side by side, a
        // row's answer comes in the time of its largest graph, and the last rows do
        // not leave a core idle.
        let (safety, progress) = std::thread::scope(|scope| {
            let progress = scope.spawn(|| catalog::progress(s, &o, limits));
            let safety = catalog::check(s, &o, limits, &mut |_| {});
            let progress = progress
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (safety, progress)
        });
        safety
            .and_then(|r| Ok((r, progress?)))
            .map_err(|e| e.to_string())
    });
    let mut rows = Vec::new();
    let mut all_match = true;
    for (_, r) in done {
        match r {
            Ok((r, p)) => {
                all_match &= r.matches_expected;
                rows.push((r, p));
            }
            Err(e) => return bad_input(args.format, &e),
        }
    }
    bar.finish_and_clear();
    let total = start.elapsed().as_secs_f64();
    match args.format {
        Format::Json => {
            let scenarios = rows
                .iter()
                .map(|(r, p)| crate::documents::MatrixRow {
                    id: r.id,
                    verdict: r.verdict.clone(),
                    expected: r.expected,
                    progress: p.as_deref().map(crate::documents::promises),
                    matches_expected: r.matches_expected,
                    states: r.stats.states,
                    unique_states: r.stats.unique_states,
                    max_depth: r.stats.max_depth,
                    seconds: r.stats.seconds,
                    states_per_second: r.stats.states_per_second(),
                    counterexample_steps: r.stories.iter().map(|s| s.steps.len()).collect(),
                })
                .collect();
            crate::output::print_json(&crate::documents::Matrix {
                verdict: crate::documents::catalog_answer(all_match),
                all_match,
                seconds: total,
                scenarios,
            });
        }
        Format::Text => {
            let verdicts: Vec<String> = rows
                .iter()
                .map(|(r, _)| match &r.verdict {
                    Verdict::Holds => "holds".to_string(),
                    Verdict::Violated(p) => format!("violated: {}", joined(p, ", ")),
                    Verdict::Unknown => "unknown".to_string(),
                })
                .collect();
            // As wide as the longest verdict, so the numbers stay in their columns.
            let w = verdicts
                .iter()
                .map(|v| v.chars().count())
                .max()
                .unwrap_or(0)
                .max(7);
            println!(
                "{:<28} {:<w$} {:>5} {:<15} {:<15} {:<8} {:>10} {:>10} {:>8} {:>12}",
                "id",
                "verdict",
                "ok",
                "eventually-free",
                "starvation-free",
                "fifo",
                "states",
                "unique",
                "secs",
                "states/s"
            );
            for ((r, p), v) in rows.iter().zip(&verdicts) {
                let promise = |which: Promise| {
                    p.as_deref()
                        .and_then(|p| p.iter().find(|v| v.promise == which))
                        .map_or("-", |v| match v.kept {
                            Kept::Holds => "holds",
                            Kept::Violated { .. } => "VIOLATED",
                            Kept::Unknown { .. } => "unknown",
                        })
                };
                println!(
                    "{:<28} {:<w$} {:>5} {:<15} {:<15} {:<8} {:>10} {:>10} {:>8.2} {:>12.0}",
                    r.id,
                    v,
                    if r.matches_expected { "yes" } else { "NO" },
                    promise(Promise::EventuallyFree),
                    promise(Promise::StarvationFree),
                    promise(Promise::Fifo),
                    r.stats.states,
                    r.stats.unique_states,
                    r.stats.seconds,
                    r.stats.states_per_second()
                );
            }
            println!(
                "total {total:.2}s; {}",
                crate::documents::catalog_line(crate::documents::catalog_answer(all_match))
            );
        }
    }
    // Rows cut short by Ctrl-C differ from the catalog only for that.
    crate::documents::catalog_answer(all_match).exit_code() as u8
}
