//! `locklab check-history FILE`: check a recorded or imported history.

use std::path::PathBuf;
use std::time::Duration;

use locklab_traces::check::{check_history, Options, Report, Selection, Verdict};
use locklab_traces::error::HistoryError;
use locklab_traces::format::History;
use locklab_traces::import::{parse_any, read_any, read_any_lean, InputFormat};

use crate::bad_input;
use crate::output::{emit, spinner, Format};

/// Arguments of `check-history`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The history file (`-`: read it from standard input).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// jsonl (locklab), edn (Jepsen/Knossos), porcupine-etcd or porcupine-kv; guessed
    /// from the content when absent.
    #[arg(long, value_name = "FORMAT", value_parser = input_formats())]
    input_format: Option<InputFormat>,
    /// Which checks: auto (all that apply, with the models the header declares; Jepsen
    /// histories as Knossos reads them), mutex (Knossos's mutex: acquire/release must
    /// linearize), critical-sections (critical sections never overlap), lock (locklab's
    /// owner-aware leased lock), fencing, or a resource model: register, cas-register,
    /// counter, kv, inventory, resource (the header's).
    #[arg(long, value_name = "MODEL", default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(Selection::NAMES))]
    model: String,
    /// The register's, counter's or inventory's value before the first operation
    /// (Knossos's `(cas-register 0)`); by default the header's, else empty.
    #[arg(long, value_name = "V", allow_negative_numbers = true)]
    initial: Option<i64>,
    /// Seconds all the checks together may take; past them the verdict is unknown
    /// (exit 3), never a violation.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_timeout)]
    timeout: Duration,
    /// Megabytes each linearizability search may use; past them the verdict is unknown
    /// (exit 3), never a violation.
    #[arg(long, value_name = "MB", default_value = "1024", value_parser = parse_megabytes)]
    memory: usize,
    /// Draw the history, its verdicts and the operations they name in this HTML file
    /// (self-contained; porcupine-rs's drawing of the linearizability search, when one
    /// ran, is written beside it as FILE's stem + `.linearizability.html`).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Parses `--input-format`.
/// `--input-format`: its names listed in help and in the error for any other.
pub(crate) fn input_formats() -> impl clap::builder::TypedValueParser<Value = InputFormat> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(InputFormat::NAMES).try_map(|s| {
        InputFormat::parse(&s)
            .ok_or_else(|| format!("expected one of {}", InputFormat::NAMES.join(", ")))
    })
}

/// A positive number of megabytes, in bytes.
pub fn parse_megabytes(s: &str) -> Result<usize, String> {
    let mb: usize = s
        .parse()
        .map_err(|_| format!("expected megabytes, got {s:?}"))?;
    if mb == 0 {
        return Err("expected a positive number of megabytes".to_string());
    }
    mb.checked_mul(1 << 20)
        .ok_or_else(|| format!("{mb} MB is more than this machine can address"))
}

/// A positive number of seconds.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("expected seconds, got {s:?}"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("expected a positive number of seconds, got {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A history piped in (`check-history -`), named `<stdin>` in messages.
fn read_stdin(format: Option<InputFormat>) -> Result<History, HistoryError> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| HistoryError::whole("<stdin>", format!("cannot read: {e}")))?;
    parse_any("<stdin>", &text, format)
}

/// Runs the command; returns the exit code.
pub fn run(args: Args) -> u8 {
    if let Err(code) = crate::output::writable(args.format, &[("--html", args.html.as_deref())]) {
        return code;
    }
    let read = if args.file.as_os_str() == "-" {
        read_stdin(args.input_format)
    } else {
        // The page draws the commands; the checks alone read them one at a time.
        match args.html {
            Some(_) => read_any(&args.file, args.input_format),
            None => read_any_lean(&args.file, args.input_format),
        }
    };
    let history = match read {
        Ok(h) => h,
        Err(e) => return crate::output::input_error(args.format, &e),
    };
    let Some(selection) = Selection::parse(&args.model, args.initial, &history.header) else {
        return bad_input(args.format, &format!("unknown --model {}", args.model));
    };
    let options = Options {
        selection,
        timeout: Some(args.timeout),
        memory: Some(args.memory),
        html: args.html.is_some(),
        initial: args.initial,
    };
    let bar = spinner(
        args.format,
        &format!("checking {} events", history.events.len()),
    );
    let report = check_history(&history, &options);
    bar.finish_and_clear();
    let report = match report {
        Ok(r) => r,
        Err(e) => return crate::output::input_error(args.format, &e),
    };
    if let Some(path) = args.html.as_deref() {
        match write_pages(path, &history, &report) {
            Ok(pages) => pages
                .iter()
                .for_each(|p| crate::output::wrote(args.format, p)),
            Err(e) => return bad_input(args.format, &format!("--html {}: {e}", path.display())),
        }
    }
    if let Err(code) = emit(args.format, None, &report, || text(&report)) {
        return code;
    }
    report.verdict.exit_code() as u8
}

/// locklab's page of the history at `path`, and porcupine-rs's drawing of the
/// linearizability search, when one ran, beside it (`r.html` → `r.linearizability.html`).
fn write_pages(
    path: &std::path::Path,
    history: &History,
    report: &Report,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut link = None;
    let mut wrote = vec![path.to_path_buf()];
    if let Some(page) = &report.html {
        let beside = path.with_extension("linearizability.html");
        std::fs::write(&beside, &page.html)?;
        link = beside.file_name().map(|n| n.to_string_lossy().into_owned());
        wrote.push(beside);
    }
    let page = locklab_traces::diagram::history_page(history, report, link.as_deref());
    std::fs::write(path, page)?;
    Ok(wrote)
}

/// The verdict in capitals, as the text reports show it.
pub fn verdict_word(v: Verdict) -> &'static str {
    v.word()
}

/// The report for people.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{}: {}\n",
        report.source,
        verdict_word(report.verdict)
    ));
    for w in &report.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    for c in &report.checks {
        out.push_str(&format!(
            "  {:<26} {:<9} {}\n",
            c.property.name(),
            verdict_word(c.verdict),
            c.summary
        ));
        for line in &c.explanation {
            out.push_str(&format!("      {line}\n"));
        }
        for op in &c.ops {
            out.push_str(&format!(
                "      > line {}: {} {}\n",
                op.line, op.process, op.description
            ));
        }
    }
    // Findings say how the servers behaved, not whether the lock held: apart, and
    // outside the verdict above.
    if !report.findings.is_empty() {
        out.push_str("  findings (not part of the verdict):\n");
    }
    for f in &report.findings {
        out.push_str(&format!(
            "  {:<26} {:<9} {}\n",
            f.name,
            verdict_word(f.verdict),
            f.summary
        ));
        for line in &f.explanation {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}
