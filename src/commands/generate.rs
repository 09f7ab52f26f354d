//! `locklab generate`: shell completions and the man page, generated from the same clap
//! definition the command line parses with, so they never drift from it.

use std::io::Write;

use crate::output::{error, ErrorKind, Format};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// The man page (roff): `locklab generate man > locklab.1`.
    Man,
    /// Completions for bash: `locklab generate bash > /etc/bash_completion.d/locklab`.
    Bash,
    /// Completions for zsh (a `_locklab` file on `$fpath`).
    Zsh,
    /// Completions for fish.
    Fish,
    /// Completions for PowerShell.
    Powershell,
    /// Completions for elvish.
    Elvish,
}

/// Arguments of `generate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to print on standard output.
    #[arg(value_enum)]
    what: What,
}

/// Prints what was asked for; 0, or 4 when standard output cannot be written.
pub fn run(args: &Args, mut command: clap::Command) -> u8 {
    use clap_complete::Shell;
    let mut out = Vec::new();
    let shell = match args.what {
        What::Man => {
            if let Err(e) = clap_mangen::Man::new(command.clone()).render(&mut out) {
                return error(Format::Text, ErrorKind::Internal, &e.to_string());
            }
            None
        }
        What::Bash => Some(Shell::Bash),
        What::Zsh => Some(Shell::Zsh),
        What::Fish => Some(Shell::Fish),
        What::Powershell => Some(Shell::PowerShell),
        What::Elvish => Some(Shell::Elvish),
    };
    if let Some(shell) = shell {
        clap_complete::generate(shell, &mut command, "locklab", &mut out);
    }
    match std::io::stdout().write_all(&out) {
        Ok(()) => 0,
        Err(e) => error(
            Format::Text,
            ErrorKind::Environment,
            &format!("stdout: {e}"),
        ),
    }
}
