//! Output formats, exit codes and error reports shared by every command.

use clap::ValueEnum;
#[cfg(feature = "harness")]
use locklab_jepsen::RunError;
use serde::Serialize;

/// Exit code: the property holds / the history is fine / every requirement holds.
pub const HOLDS: u8 = 0;
/// Exit code: a violation was found (with proof).
pub const VIOLATED: u8 = 1;
/// Exit code: bad usage or bad input (a flag, an id, a config, a history line).
pub const BAD_INPUT: u8 = 2;
/// Exit code: unknown (a bound, a timeout, or a run that tested nothing).
pub const UNKNOWN: u8 = 3;
/// Exit code: could not run (a server, a port, a client program that died before
/// `init`, the machine spoiling every attempt, or a bug in locklab): retry the job,
/// the input is fine.
pub const COULD_NOT_RUN: u8 = 4;

/// The exit codes, for every command's `--help`.
pub const EXIT_CODES: &str = "Exit codes:
  0  the property holds / the history is fine / every requirement holds
  1  a violation was found, with proof
  2  bad usage or bad input (a flag, a scenario id, a config, a history line)
  3  unknown: a bound or timeout was hit, or a run tested nothing (no critical
     section entered, a fault that never fired)
  4  could not run: a server, a port, a client program that died before init, a
     machine that spoiled every attempt, or a bug in locklab (retry; the input is fine)
With --format json, an error is {\"verdict\": \"error\", \"error_kind\": usage|input|environment|internal, \"error\": …}.";

pub use crate::documents::ErrorKind;

impl ErrorKind {
    /// Its exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Usage | ErrorKind::Input => BAD_INPUT,
            ErrorKind::Environment | ErrorKind::Internal => COULD_NOT_RUN,
        }
    }

    /// The kind of a run's error.
    #[cfg(feature = "harness")]
    pub fn of_run(e: &RunError) -> ErrorKind {
        match e {
            RunError::UnknownId { .. } | RunError::BadOption(_) => ErrorKind::Usage,
            RunError::Environment(_)
            | RunError::Unreliable(_)
            | RunError::NotBuilt(_)
            | RunError::CannotStage(_) => ErrorKind::Environment,
            RunError::Internal(_) => ErrorKind::Internal,
            // Not an error kind: a run with no model verdict is unknown (exit 3); the
            // caller reports it as such.
            RunError::Unknown(_) => ErrorKind::Environment,
        }
    }
}

/// Prints one `--format json` document (a type of [`crate::documents`]) with
/// `schema_version` beside its fields.
pub fn print_json<T: Serialize>(body: &T) {
    let doc = crate::documents::Document {
        schema_version: crate::documents::SCHEMA_VERSION,
        body,
    };
    match serde_json::to_string_pretty(&doc) {
        Ok(text) => println!("{text}"),
        // Only a bug makes a document fail to serialize: say so as a document too.
        Err(e) => println!(
            "{{\"schema_version\": {}, \"verdict\": \"error\", \"error_kind\": \"internal\", \"error\": {:?}}}",
            crate::documents::SCHEMA_VERSION,
            e.to_string()
        ),
    }
}

/// Prints an error in the requested format; returns its exit code.
pub fn error(format: Format, kind: ErrorKind, message: &str) -> u8 {
    match format {
        Format::Json => print_json(&crate::documents::Failure {
            verdict: crate::documents::NoAnswer::Error,
            error_kind: Some(kind),
            error: message,
            file: None,
            line: None,
        }),
        Format::Text => eprintln!("error: {message}"),
    }
    kind.exit_code()
}

/// Says on standard error, in text mode, that `path` was written: a file written
/// silently is a file nobody finds (JSON documents name their files in fields).
pub fn wrote(format: Format, path: &std::path::Path) {
    if format == Format::Text {
        eprintln!("wrote {}", path.display());
    }
}

/// Prints a history that does not read, naming its file and line in JSON's own fields
/// too; returns exit code 2.
pub fn input_error(format: Format, e: &locklab_traces::error::HistoryError) -> u8 {
    let message = e.to_string();
    match format {
        Format::Json => print_json(&crate::documents::Failure {
            verdict: crate::documents::NoAnswer::Error,
            error_kind: Some(ErrorKind::Input),
            error: &message,
            file: Some(&e.source),
            line: e.line,
        }),
        Format::Text => eprintln!("error: {message}"),
    }
    ErrorKind::Input.exit_code()
}

/// `--color`: whether text output marks verdicts in colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When standard output is a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always (a CI log that renders ANSI colours).
    Always,
    /// Never, even on a terminal (a log that shows escape codes raw).
    Never,
}

/// Whether text output is coloured: decided once, from `--color`, before any output.
static COLORED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Decides once whether text output is coloured.
pub fn set_color(choice: Color) {
    use std::io::IsTerminal;
    let on = match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    COLORED.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// `text` with its verdict words coloured when colour is on: VIOLATED and VIOLATION red,
/// UNKNOWN yellow, HOLDS and a verdict's OK green. An OK is a verdict only at the start
/// of a line or after ": " — `-> OK` is a Redis reply in a story.
pub fn paint(text: &str) -> String {
    if !COLORED.load(std::sync::atomic::Ordering::Relaxed) {
        return text.to_string();
    }
    coloured(text)
}

/// `text` with its verdict words coloured ([`paint`] with colour on).
pub(crate) fn coloured(text: &str) -> String {
    const RED: &str = "\x1b[1;31m";
    const GREEN: &str = "\x1b[1;32m";
    const YELLOW: &str = "\x1b[1;33m";
    const RESET: &str = "\x1b[0m";
    let mut out = String::with_capacity(text.len() + 32);
    let mut word = String::new();
    let mut before = String::new();
    let flush = |word: &mut String, before: &str, out: &mut String| {
        let start = before.is_empty() || before.ends_with('\n') || before.ends_with(": ");
        let colour = match word.as_str() {
            "VIOLATED" | "VIOLATION" => Some(RED),
            "UNKNOWN" => Some(YELLOW),
            "HOLDS" => Some(GREEN),
            "OK" if start => Some(GREEN),
            _ => None,
        };
        match colour {
            Some(c) => {
                out.push_str(c);
                out.push_str(word);
                out.push_str(RESET);
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            if word.is_empty() {
                // The last two bytes or more: never a cut inside a character (a dash
                // or an arrow before the word), and enough for `ends_with(": ")`.
                let mut from = out.len().saturating_sub(2);
                while !out.is_char_boundary(from) {
                    from -= 1;
                }
                before = out[from..].to_string();
            }
            word.push(ch);
        } else {
            flush(&mut word, &before, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &before, &mut out);
    out
}

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

/// Checks, before any work, that a file can be written at each given `(flag, path)`:
/// its directory exists, it is no directory itself, it is not read-only — so a long
/// search or run does not end in a path error. `Err` carries the exit code (2),
/// already reported.
pub fn writable(format: Format, paths: &[(&str, Option<&std::path::Path>)]) -> Result<(), u8> {
    for (flag, path) in paths {
        let Some(path) = path else { continue };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let why = if path.is_dir() {
            Some("it is a directory".to_string())
        } else if !dir.is_dir() {
            Some(format!("there is no directory {}", dir.display()))
        } else if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
            Some("the file is read-only".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            return Err(crate::bad_input(
                format,
                &format!("{flag} {}: {why}", path.display()),
            ));
        }
    }
    Ok(())
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
        Format::Json => print_json(value),
        Format::Text => print!("{}", paint(&text())),
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::coloured;
    use proptest::prelude::*;

    /// The text without its colour codes.
    pub(crate) fn plain(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("\x1b[") {
            out.push_str(&rest[..i]);
            let after = &rest[i..];
            rest = after.find('m').map_or("", |m| &after[m + 1..]);
        }
        out.push_str(rest);
        out
    }

    /// A verdict word after a non-ASCII character panicked (a byte slice cut inside
    /// the character): `check-history c50-bad.txt --color always` exited 101.
    #[test]
    fn a_verdict_after_a_dash_is_coloured_and_nothing_is_cut() {
        let text = "c50-bad.txt – VIOLATION: linearizability\n→ OK\nfoo: OK";
        let out = coloured(text);
        assert!(out.contains("\x1b[1;31mVIOLATION\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[1;32mOK\x1b[0m"), "{out:?}");
        assert_eq!(plain(&out), text);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Any text, non-ASCII and verdict words mixed in, comes out whole: colour
        /// codes added, nothing else changed, never a panic.
        #[test]
        fn colouring_any_text_only_adds_colour_codes(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("VIOLATED".to_string()),
                    Just("OK".to_string()),
                    Just("HOLDS".to_string()),
                    Just("UNKNOWN".to_string()),
                    Just(": ".to_string()),
                    Just("\n".to_string()),
                    "[–→é✓ a-z0-9:]{0,4}",
                    any::<String>().prop_map(|s| s.replace('\x1b', "")),
                ],
                0..12,
            )
        ) {
            let text: String = parts.concat();
            prop_assert_eq!(plain(&coloured(&text)), text);
        }
    }

    /// Colour codes are written here and nowhere else, so that the property above
    /// covers every command's text.
    #[test]
    fn colour_is_added_in_one_place() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("src/output.rs")
                    && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("\\x1b["))
                {
                    found.push(path.display().to_string());
                }
            }
        }
        let mut found = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(
            found.is_empty(),
            "colour codes written outside output.rs: {found:?}"
        );
    }
}
