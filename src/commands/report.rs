//! `locklab report DIR`: one page per catalog scenario (its model's sequence diagram)
//! and `index.html` over them all — the page a course or a team wiki links to.

use std::path::{Path, PathBuf};

use locklab_models::catalog::{self, scenarios, Overrides};
use locklab_models::check::Limits;
use locklab_traces::diagram::model::{expected_text, verdict_text};
use locklab_traces::diagram::{index_page, IndexRow};

use crate::bad_input;
use crate::commands::pages::model_html;
use crate::output::{spinner, Format};

/// Arguments of `report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to write into (created if missing): `index.html` and `<id>.html`.
    dir: PathBuf,
    /// Only these scenario ids (comma-separated; default: the whole catalog).
    #[arg(long, value_name = "ID,..", value_delimiter = ',')]
    only: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The real run's agreement, when `DIR/runs/<id>.json` holds the output of
/// `locklab run <id> --format json`.
fn agreement(dir: &Path, id: &str, runnable: bool) -> Option<String> {
    let saved = std::fs::read_to_string(dir.join("runs").join(format!("{id}.json"))).ok();
    let doc: Option<serde_json::Value> = saved.and_then(|s| serde_json::from_str(&s).ok());
    match doc {
        Some(d) => {
            let a = &d["agreement"];
            let verdict = a["verdict"].as_str().unwrap_or("?");
            Some(match a["agrees"].as_bool() {
                Some(true) => format!("run: {verdict}, agrees with the model"),
                Some(false) => format!("run: {verdict}, DISAGREES"),
                None => "run report unreadable".to_string(),
            })
        }
        None if runnable => Some(format!("not run yet (locklab run {id})")),
        None => Some("model only".to_string()),
    }
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let all = scenarios();
    for id in &args.only {
        if let Err(e) = catalog::find(id) {
            return bad_input(args.format, &e.to_string());
        }
    }
    if let Err(e) = std::fs::create_dir_all(&args.dir) {
        return bad_input(args.format, &format!("{}: {e}", args.dir.display()));
    }
    // A build without real runs cannot say which rows run; it hints at none.
    #[cfg(feature = "harness")]
    let runnable: Vec<&str> = locklab_jepsen::runnable().iter().map(|p| p.id).collect();
    #[cfg(not(feature = "harness"))]
    let runnable: Vec<&str> = Vec::new();
    let bar = spinner(args.format, "report");
    let mut rows = Vec::new();
    let mut all_match = true;
    for s in all
        .iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| o == s.id.name()))
    {
        // Ctrl-C: the pages written so far get their index, and the rest are not begun.
        if locklab_models::check::interrupted() {
            break;
        }
        bar.set_message(format!("checking {}", s.id));
        let o = Overrides::default();
        let report = match catalog::check(s, &o, Limits::default(), &mut |_| {}) {
            Ok(r) => r,
            Err(e) => return bad_input(args.format, &e.to_string()),
        };
        // The promises' lassos are drawn too; a row without a lock has none.
        let progress = catalog::progress(s, &o, Limits::default()).ok().flatten();
        let html = match model_html(s, &report, &o, progress.as_deref()) {
            Ok(h) => h,
            Err(e) => return bad_input(args.format, &e),
        };
        let page = format!("{}.html", s.id);
        if let Err(e) = std::fs::write(args.dir.join(&page), html) {
            return bad_input(
                args.format,
                &format!("{}: {e}", args.dir.join(&page).display()),
            );
        }
        all_match &= report.matches_expected;
        rows.push(IndexRow {
            id: s.id.to_string(),
            family: s.family.to_string(),
            protocol: s.protocol.to_string(),
            fault: s.faults.to_string(),
            expected: expected_text(s.expected),
            verdict: verdict_text(&report.verdict),
            matches: report.matches_expected,
            agreement: agreement(&args.dir, s.id.name(), runnable.contains(&s.id.name())),
            page,
        });
    }
    bar.finish_and_clear();
    let index = args.dir.join("index.html");
    if let Err(e) = std::fs::write(&index, index_page(&rows)) {
        return bad_input(args.format, &format!("{}: {e}", index.display()));
    }
    match args.format {
        Format::Json => {
            crate::output::print_json(&crate::documents::Site {
                dir: &args.dir,
                index: &index,
                verdict: crate::documents::catalog_answer(all_match),
                all_match,
                scenarios: &rows,
            });
        }
        Format::Text => {
            for r in &rows {
                println!("{:<28} {:<44} {}", r.id, r.verdict, r.page);
            }
            println!("wrote {} pages and {}", rows.len(), index.display());
            println!(
                "{}",
                crate::documents::catalog_line(crate::documents::catalog_answer(all_match))
            );
        }
    }
    if locklab_models::check::interrupted() {
        eprintln!(
            "locklab: interrupted after {} page(s); the rest were not written",
            rows.len()
        );
    }
    crate::documents::catalog_answer(all_match).exit_code() as u8
}
