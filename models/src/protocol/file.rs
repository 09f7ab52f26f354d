//! A protocol file, whatever its family: TOML whose `family` key says which family's
//! reader takes it (see [`redis::file`](super::redis::file) for a Redis file's keys).
//! Every error names the file and the line.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{Described, ProtocolError};

/// The 1-based line of byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// Reads the protocol file at `path`; scripts named in it are read beside it. (The
/// one place this crate reads files: a protocol is its file.)
pub fn load(path: &Path) -> Result<Described, ProtocolError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ProtocolError::at(&file, format!("cannot read it: {e}")))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&file, &text, &|name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    })
}

/// Only the key that picks the reader; the family's reader reads the rest.
#[derive(Deserialize)]
struct Family {
    family: Option<Spanned<String>>,
}

/// Parses a protocol file's `text` (`file` names it in errors); `read` fetches a
/// script by the name the file gives.
pub fn parse(
    file: &str,
    text: &str,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Described, ProtocolError> {
    let head: Family = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        ProtocolError::at(&format!("{file}:{line}"), e.message().trim().to_string())
    })?;
    let known: Vec<&str> = Described::FAMILIES.iter().map(|f| f.name()).collect();
    let Some(family) = head.family else {
        return Err(ProtocolError::at(
            &format!("{file}:1"),
            format!("no `family`: write one of {}", known.join(", ")),
        ));
    };
    let unread = || {
        ProtocolError::at(
            &format!("{file}:{}", line_of(text, family.span().start)),
            format!(
                "family `{}`: protocol files describe {} locks so far",
                family.get_ref(),
                known.join(", ")
            ),
        )
    };
    let typed: crate::registry::Family = family.get_ref().parse().map_err(|_| unread())?;
    Described::read(typed, file, text, read).unwrap_or_else(|| Err(unread()))
}

/// A reply pattern a step names an outcome by: one, or several (`busy = ["nil", "0"]`).
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Patterns {
    /// One pattern.
    One(String),
    /// Several, any of which means the outcome.
    Many(Vec<String>),
}

impl Patterns {
    /// Every pattern written.
    pub(crate) fn list(&self) -> Vec<&str> {
        match self {
            Patterns::One(p) => vec![p.as_str()],
            Patterns::Many(ps) => ps.iter().map(String::as_str).collect(),
        }
    }
}
