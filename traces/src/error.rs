//! Errors that name where the input went wrong.

use std::fmt;

/// A history that cannot be read or makes no sense, with the place that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryError {
    /// The file (or `<stdin>`, or a test's name).
    pub source: String,
    /// The 1-based line, when one line is to blame.
    pub line: Option<usize>,
    /// What was wrong, and what was expected instead.
    pub message: String,
}

impl HistoryError {
    /// An error at one line of `source`.
    pub fn at(source: &str, line: usize, message: impl Into<String>) -> Self {
        HistoryError {
            source: source.to_string(),
            line: Some(line),
            message: message.into(),
        }
    }

    /// An error about the whole of `source`.
    pub fn whole(source: &str, message: impl Into<String>) -> Self {
        HistoryError {
            source: source.to_string(),
            line: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.source, l, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for HistoryError {}
