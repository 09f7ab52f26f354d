//! `locklab export FILE`: write a history (locklab's, or any format `check-history`
//! reads) as Jepsen EDN, or as locklab JSON Lines.

use std::io::Write;
use std::path::PathBuf;

use locklab_traces::import::{read_any, InputFormat};
use locklab_traces::writer::HistoryWriter;
use locklab_traces::History;

use crate::bad_input;
use crate::commands::check_history::input_formats;
use crate::output::Format;

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum To {
    /// Jepsen EDN: one operation map per line in a vector, nemesis events as
    /// `:process :nemesis`; the header rides in a first-line comment so locklab reads
    /// the file back with the meaning it had.
    Edn,
    /// locklab's JSON Lines (an imported history, with the models it was read with).
    Jsonl,
}

/// Arguments of `export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The history file.
    file: PathBuf,
    /// jsonl (locklab), edn (Jepsen/Knossos), porcupine-etcd or porcupine-kv; guessed
    /// from the content when absent.
    #[arg(long, value_name = "FORMAT", value_parser = input_formats())]
    input_format: Option<InputFormat>,
    /// The format to write.
    #[arg(long, value_enum, default_value_t = To::Edn)]
    to: To,
    /// Write here instead of to stdout.
    #[arg(long, value_name = "FILE", short)]
    output: Option<PathBuf>,
    /// How to report: text, or one JSON document (errors, and the summary when
    /// `--output` is given).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

fn render(history: &History, to: To) -> std::io::Result<Vec<u8>> {
    match to {
        To::Edn => Ok(locklab_traces::export::to_edn(history).into_bytes()),
        To::Jsonl => {
            let writer = HistoryWriter::new(Vec::new(), &history.header)?;
            for (_, event) in &history.events {
                writer.record(event)?;
            }
            Ok(writer.into_inner())
        }
    }
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    let history = match read_any(&args.file, args.input_format) {
        Ok(h) => h,
        Err(e) => return crate::output::input_error(args.format, &e),
    };
    let bytes = match render(&history, args.to) {
        Ok(b) => b,
        Err(e) => return bad_input(args.format, &format!("cannot render the history: {e}")),
    };
    let written = match &args.output {
        Some(path) => std::fs::write(path, &bytes)
            .map_err(|e| format!("--output {}: cannot write: {e}", path.display())),
        None => std::io::stdout()
            .lock()
            .write_all(&bytes)
            .map_err(|e| format!("cannot write to stdout: {e}")),
    };
    if let Err(message) = written {
        return bad_input(args.format, &message);
    }
    let to = match args.to {
        To::Edn => "edn",
        To::Jsonl => "jsonl",
    };
    match (args.format, &args.output) {
        (Format::Json, Some(path)) => crate::output::print_json(&crate::documents::Exported {
            source: &history.source,
            output: path,
            to,
            events: history.events.len(),
            warnings: &history.warnings,
        }),
        (Format::Text, Some(path)) => {
            for w in &history.warnings {
                println!("warning: {w}");
            }
            println!(
                "{}: {} events written as {to} to {}",
                history.source,
                history.events.len(),
                path.display()
            );
        }
        // stdout holds the history itself; remarks go beside it.
        (_, None) => {
            for w in &history.warnings {
                eprintln!("warning: {w}");
            }
        }
    }
    0
}
