//! Importers: histories nobody here wrote, turned into locklab events so the same
//! checkers can judge them.
//!
//! - [`jepsen`]: Jepsen/Knossos EDN histories (`{:type :invoke, :f :cas, :value [1 2],
//!   :process 3, :time 123}`), one map per line or a vector or list of maps; Knossos's
//!   cas-register `:read/:write/:cas` and mutex `:acquire/:release`, kv
//!   `:get/:put/:append` with `:key`; read as Knossos means them (`:fail` did not
//!   happen). A history `locklab export` wrote keeps locklab's meaning.
//! - [`porcupine`]: the etcd Jepsen log lines of Porcupine's test data
//!   (`INFO  jepsen.util - 3  :invoke :cas [1 4]`). Porcupine's kv files are EDN maps
//!   and go through [`jepsen`] with Porcupine's meaning.
//!
//! Each format means what its own tool means by `ok`, `fail` and `info`; the table is in
//! `traces/HISTORY.md`.

pub mod edn;
pub mod jepsen;
pub mod porcupine;

use std::path::Path;

use crate::error::HistoryError;
use crate::format::History;

/// The formats `check-history --input-format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// locklab's JSON Lines.
    Jsonl,
    /// Jepsen/Knossos EDN.
    Edn,
    /// Porcupine's etcd Jepsen log lines.
    PorcupineEtcd,
    /// Porcupine's kv EDN maps.
    PorcupineKv,
}

impl InputFormat {
    /// Every name, for help and errors.
    pub const NAMES: [&'static str; 4] = ["jsonl", "edn", "porcupine-etcd", "porcupine-kv"];

    /// Parses a name.
    pub fn parse(name: &str) -> Option<InputFormat> {
        match name {
            "jsonl" => Some(InputFormat::Jsonl),
            "edn" => Some(InputFormat::Edn),
            "porcupine-etcd" => Some(InputFormat::PorcupineEtcd),
            "porcupine-kv" => Some(InputFormat::PorcupineKv),
            _ => None,
        }
    }

    /// Guesses from the content: `{"` opening the first line is ours, a Jepsen log line
    /// (`… jepsen.util - …`) among the first lines an etcd log, `{`, `[`, `(`, `#` or a
    /// `;` comment EDN; anything else is read as ours, whose errors say what was
    /// expected.
    pub fn sniff(text: &str) -> InputFormat {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("");
        if first.starts_with('{') && first[1..].trim_start().starts_with('"') {
            InputFormat::Jsonl
        } else if std::iter::once(first)
            .chain(lines.take(20))
            .any(|l| l.contains(porcupine::MARK))
        {
            InputFormat::PorcupineEtcd
        } else if first.starts_with(['{', '[', '(', '#', ';']) {
            InputFormat::Edn
        } else {
            InputFormat::Jsonl
        }
    }
}

/// Reads a history in any format (`None`: guess it from the content).
pub fn read_any(path: &Path, format: Option<InputFormat>) -> Result<History, HistoryError> {
    read_file(path, format, false)
}

/// Reads a history in any format as [`read_any`] does; one of locklab's keeps its
/// `command` events bare ([`crate::reader::read_path_lean`]): for checking it, not for
/// drawing it.
pub fn read_any_lean(path: &Path, format: Option<InputFormat>) -> Result<History, HistoryError> {
    read_file(path, format, true)
}

fn read_file(
    path: &Path,
    format: Option<InputFormat>,
    lean: bool,
) -> Result<History, HistoryError> {
    let name = path.display().to_string();
    let format = match format {
        Some(f) => f,
        None => InputFormat::sniff(&opening(&name, path)?),
    };
    if format == InputFormat::Jsonl {
        // Ours is read a line at a time; the others' readers take the whole text.
        return match lean {
            true => crate::reader::read_path_lean(path),
            false => crate::reader::read_path(path),
        };
    }
    let text = crate::reader::read_text(&name, path)?;
    parse_any(&name, &text, Some(format))
}

/// The first 64 KiB of a file, enough to tell its format, as text (a character cut at
/// the end, or bytes that are not UTF-8, are replaced: the reader proper reports those).
fn opening(name: &str, path: &Path) -> Result<String, HistoryError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 << 10).read_to_end(&mut head))
        .map_err(|e| HistoryError::whole(name, format!("cannot read: {e}")))?;
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// Parses a history held in memory.
pub fn parse_any(
    name: &str,
    text: &str,
    format: Option<InputFormat>,
) -> Result<History, HistoryError> {
    match format.unwrap_or_else(|| InputFormat::sniff(text)) {
        InputFormat::Jsonl => crate::reader::parse(name, text),
        InputFormat::Edn => jepsen::parse(name, text),
        InputFormat::PorcupineKv => jepsen::parse_porcupine_kv(name, text),
        InputFormat::PorcupineEtcd => porcupine::parse_etcd(name, text),
    }
}
