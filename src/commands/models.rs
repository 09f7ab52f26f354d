//! `locklab models`: the scenario catalog.

use locklab_models::catalog::{scenarios, Expected};

use crate::output::{joined, Format};

/// Arguments of `models`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let all = scenarios();
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default()),
        Format::Text => {
            for s in &all {
                let expected = match s.expected {
                    Expected::Holds => "holds".to_string(),
                    Expected::Violates(p) => format!("violates {}", joined(p, " + ")),
                };
                println!(
                    "{:<28} {:<9} fault: {:<45} expected: {expected}",
                    s.id, s.family, s.faults
                );
                println!("{:<28} {}", "", s.lesson);
            }
        }
    }
    0
}
