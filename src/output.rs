//! Output formats shared by every command.

use clap::ValueEnum;

/// How a command prints its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    #[default]
    Text,
    /// One JSON document on stdout, for machines.
    Json,
}

/// A spinner on stderr while long work runs; hidden when stderr is not a terminal or
/// the output is JSON.
pub fn spinner(format: Format, message: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if format == Format::Json || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}
