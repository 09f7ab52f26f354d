//! `locklab models`: the scenario catalog.

use locklab_models::catalog::{self, Expected, Overrides};
use locklab_models::check::Limits;
use locklab_models::progress::{self, Kept, Promise};

use crate::bad_input;
use crate::output::{joined, spinner, Format};

use super::rows::{each_row, rows_of};

/// Arguments of `models`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also decide each row's progress promises (eventually-free, starvation-free and,
    /// where requests are ordered, fifo) with the checker, at the row's default bounds,
    /// and show them (a few seconds)
    #[arg(long)]
    progress: bool,
    /// Only these scenario ids (comma-separated; default: the whole catalog).
    #[arg(long, value_name = "ID,..", value_delimiter = ',')]
    only: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let all = match rows_of(&args.only) {
        Ok(rows) => rows,
        Err(e) => return bad_input(args.format, &e.to_string()),
    };
    // What the checker decides of each row's progress, when asked: `None` where the
    // row's family states no progress (no lock).
    type Decided = Result<Option<Vec<progress::Verdict>>, String>;
    let decided: Option<Vec<Decided>> = args.progress.then(|| {
        let bar = spinner(args.format, "progress");
        let limits = Limits {
            threads: 1,
            ..Limits::default()
        };
        let rows = each_row(all.clone(), &bar, |s| {
            catalog::progress(s, &Overrides::default(), limits).map_err(|e| e.to_string())
        });
        bar.finish_and_clear();
        rows.into_iter().map(|(_, p)| p).collect()
    });
    if let Some(Err(e)) = decided.iter().flatten().find(|p| p.is_err()) {
        return bad_input(args.format, e);
    }
    let progress_of = |i: usize| -> Option<&[progress::Verdict]> {
        decided.as_ref()?.get(i)?.as_ref().ok()?.as_deref()
    };
    match args.format {
        Format::Json => {
            let scenarios = all
                .iter()
                .enumerate()
                .map(|(i, s)| crate::documents::ModelRow {
                    scenario: s,
                    progress: progress_of(i).map(crate::documents::promises),
                })
                .collect();
            crate::output::print_json(&crate::documents::Models { scenarios });
        }
        Format::Text => {
            for (i, s) in all.iter().enumerate() {
                let expected = match s.expected {
                    Expected::Holds => "holds".to_string(),
                    Expected::Violates(p) => format!("violates {}", joined(p, " + ")),
                };
                println!(
                    "{:<28} {:<9} fault: {:<45} expected: {expected}",
                    s.id, s.family, s.faults
                );
                println!("{:<28} {}", "", s.lesson);
                if decided.is_some() {
                    println!("{:<28} progress: {}", "", progress_line(progress_of(i)));
                }
            }
        }
    }
    // Ctrl-C left the rows it cut short undecided.
    if locklab_models::check::interrupted() {
        crate::output::UNKNOWN
    } else {
        0
    }
}

/// A row's progress verdicts in one line: `eventually-free holds · starvation-free
/// VIOLATED (c0 waits for ever (7 steps, then nothing more can happen)) · fifo —`.
fn progress_line(verdicts: Option<&[progress::Verdict]>) -> String {
    let Some(verdicts) = verdicts else {
        return "not stated (no lock)".to_string();
    };
    Promise::ALL
        .iter()
        .map(|&p| {
            let kept = match verdicts.iter().find(|v| v.promise == p).map(|v| &v.kept) {
                None => "— (no request order)".to_string(),
                Some(Kept::Holds) => "holds".to_string(),
                Some(Kept::Violated { lasso }) => format!("VIOLATED: {}", lasso.shape()),
                Some(Kept::Unknown { .. }) => "unknown".to_string(),
            };
            format!("{p} {kept}")
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
