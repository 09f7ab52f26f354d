//! `locklab explain ID`: the teaching narrative — the protocol, the fault, the lesson,
//! and the shortest story step by step.

use locklab_models::catalog;
use locklab_models::check::Limits;

use crate::bad_input;
use crate::commands::check::{exit_code, run_report, story_text, verdict_text, Bounds};
use crate::commands::pages::write_model_page;
use crate::output::{joined, Format};

/// Arguments of `explain`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario id.
    id: String,
    #[command(flatten)]
    bounds: Bounds,
    /// Also write the story as a self-contained HTML page (sequence diagram).
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    if let Err(code) = crate::output::writable(args.format, &[("--html", args.html.as_deref())]) {
        return code;
    }
    let scenario = match catalog::find(&args.id) {
        Ok(s) => s,
        Err(e) => return bad_input(args.format, &e.to_string()),
    };
    let report = match run_report(&args.id, &args.bounds, Limits::default(), args.format) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(path) = &args.html {
        if let Err(code) =
            write_model_page(args.format, path, &report, &args.bounds.overrides(), None)
        {
            return code;
        }
    }
    match args.format {
        Format::Json => {
            crate::output::print_json(&crate::documents::Explained {
                verdict: report.verdict.word(),
                scenario,
                report: &report,
            });
        }
        Format::Text => {
            println!("{} — {}", scenario.id, scenario.protocol);
            println!("Fault: {}", scenario.faults);
            println!("Properties: {}", joined(scenario.properties, ", "));
            println!("Lesson: {}\n", scenario.lesson);
            print!("{}", crate::output::paint(&verdict_text(&report)));
            if report.stories.is_empty() {
                println!(
                    "\nNo counterexample exists within these bounds, so there is no story to tell."
                );
            }
            for s in &report.stories {
                print!("\n{}", story_text(s));
            }
        }
    }
    exit_code(&report.verdict)
}
