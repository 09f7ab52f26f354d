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

/// Items in their display spelling, separated by `sep` (`mutual exclusion, liveness`).
pub fn joined<T: std::fmt::Display>(items: &[T], sep: &str) -> String {
    items.iter().map(T::to_string).collect::<Vec<_>>().join(sep)
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

/// What `check-history` and `run` write when no linearizability check drew a page.
const NO_PAGE: &str = "<!doctype html><title>locklab</title><p>No linearizability check ran on this history, so there is nothing to draw.</p>";

/// Writes the HTML report (when asked) and prints `value` as JSON or `text` for people.
/// `Err` carries the exit code of a failure (2), already reported.
pub fn emit<T: serde::Serialize>(
    format: Format,
    html: Option<(&std::path::Path, Option<&locklab_traces::html::Page>)>,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<(), u8> {
    if let Some((path, page)) = html {
        let page = page.map_or(NO_PAGE, |p| p.html.as_str());
        if let Err(e) = std::fs::write(path, page) {
            return Err(crate::bad_input(
                format,
                &format!("--html {}: {e}", path.display()),
            ));
        }
    }
    match format {
        Format::Json => match serde_json::to_string_pretty(value) {
            Ok(s) => println!("{s}"),
            Err(e) => return Err(crate::bad_input(format, &e.to_string())),
        },
        Format::Text => print!("{}", text()),
    }
    Ok(())
}
