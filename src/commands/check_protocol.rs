//! `locklab check --protocol FILE [ENV]`: model-check a user's protocol file in one of
//! its family's environments, or in each, and print every verdict with the shortest
//! story of each violated property.

use locklab_models::catalog::{Report, Verdict};
use locklab_models::protocol::{self, Environment};

use super::check::{exit_code, story_text, verdict_text_with, ProtocolRequest};
use crate::bad_input;
use crate::output::{spinner, Format};

/// Runs the check; returns the exit code (the worst over the environments: a
/// violation, else an unknown, else 0).
pub fn run(request: ProtocolRequest<'_>) -> u8 {
    let ProtocolRequest {
        file,
        env,
        bounds,
        limits,
        format,
    } = request;
    let described = match protocol::load(file) {
        Ok(d) => d,
        Err(e) => return bad_input(format, &e.to_string()),
    };
    let envs: Vec<Environment> = match env {
        None => described.environments(),
        Some(name) => match protocol::check::environment(&described, name) {
            Ok(e) => vec![e],
            Err(e) => return bad_input(format, &e.to_string()),
        },
    };
    let mut reports: Vec<Report> = Vec::new();
    for e in &envs {
        let bar = spinner(
            format,
            &format!("checking {} in {}", described.name(), e.name),
        );
        let result = protocol::check_in(&described, e, &bounds.overrides(), limits, &mut |s| {
            bar.set_message(format!(
                "checking {} in {}: {} states, depth {}",
                described.name(),
                e.name,
                s.unique_states,
                s.max_depth
            ));
        });
        bar.finish_and_clear();
        match result {
            Ok(r) => reports.push(r),
            Err(err) => return bad_input(format, &err.to_string()),
        }
    }
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "protocol": described.name(),
                "file": file.display().to_string(),
                "reports": reports,
            }))
            .unwrap_or_default()
        ),
        Format::Text => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                print!("{}", verdict_text_with(r, false));
                for s in &r.stories {
                    print!("\n{}", story_text(s));
                }
            }
        }
    }
    worst(&reports)
}

/// The exit code of several verdicts.
fn worst(reports: &[Report]) -> u8 {
    let codes = reports.iter().map(|r| exit_code(&r.verdict));
    if reports
        .iter()
        .any(|r| matches!(r.verdict, Verdict::Violated(_)))
    {
        1
    } else {
        codes.max().unwrap_or(0)
    }
}
