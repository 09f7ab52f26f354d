//! An EDN reader for what Jepsen and Knossos write and read, with the line of every
//! error: nil, booleans, numbers (with Clojure's `N`/`M` suffixes, ratios, hex and
//! octal), strings, characters, keywords and symbols (namespaced too), lists, vectors,
//! maps (also `#:ns{…}`), sets, `;` comments, `#_` discards, `##Inf`/`##NaN`, and
//! tagged values (`#inst "…"`, `#uuid "…"`, record literals such as
//! `#jepsen.history.Op{…}`), which read as the value they tag.
//!
//! Input from outside is never trusted: nesting is bounded ([`MAX_DEPTH`]) so that
//! `[[[[…` is an error rather than a stack overflow, and nothing here panics.

use std::collections::HashSet;
use std::fmt;

mod atom;
mod reader;
pub use reader::Reader;

/// How deeply forms may nest (collections, tags and discards together). Jepsen
/// operations nest a handful of levels; the bound only keeps the recursion off the end
/// of the stack.
pub const MAX_DEPTH: usize = 128;

/// An EDN value.
#[derive(Clone, Debug, PartialEq)]
pub enum Edn {
    /// `nil`
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A larger integer (`123N`, or too many digits for 64 bits), as its digits.
    BigInt(String),
    /// A floating-point number (also `1.5M` decimals and `1/3` ratios, approximated).
    Float(f64),
    /// A string.
    Str(String),
    /// A character (`\a`, `\newline`, `\u00e9`).
    Char(char),
    /// `:keyword` (without the colon; `ns/name` when namespaced).
    Keyword(String),
    /// A bare symbol.
    Symbol(String),
    /// `[…]` or `(…)`.
    List(Vec<Edn>),
    /// `#{…}`.
    Set(Vec<Edn>),
    /// `{k v …}` in order.
    Map(Vec<(Edn, Edn)>),
}

impl Edn {
    /// The value under keyword `:k` of a map.
    pub fn get(&self, k: &str) -> Option<&Edn> {
        match self {
            Edn::Map(entries) => entries
                .iter()
                .find(|(key, _)| matches!(key, Edn::Keyword(name) if name == k))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The keyword's name.
    pub fn keyword(&self) -> Option<&str> {
        match self {
            Edn::Keyword(k) => Some(k),
            _ => None,
        }
    }

    /// The value as an unsigned 64-bit integer, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Edn::Int(i) => u64::try_from(*i).ok(),
            Edn::BigInt(digits) => digits.parse().ok(),
            _ => None,
        }
    }

    /// The value as JSON: keywords become `":name"` strings (bare names as map keys),
    /// characters and symbols strings, maps objects, lists and sets arrays, integers past
    /// 64 bits strings of their digits.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Edn::Nil => Value::Null,
            Edn::Bool(b) => Value::Bool(*b),
            Edn::Int(i) => Value::from(*i),
            Edn::BigInt(digits) => match digits.parse::<u64>() {
                Ok(u) => Value::from(u),
                Err(_) => Value::String(digits.clone()),
            },
            Edn::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Edn::Str(s) | Edn::Symbol(s) => Value::String(s.clone()),
            Edn::Char(c) => Value::String(c.to_string()),
            Edn::Keyword(k) => Value::String(format!(":{k}")),
            Edn::List(v) | Edn::Set(v) => Value::Array(v.iter().map(Edn::to_json).collect()),
            Edn::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let key = match k {
                            Edn::Keyword(k) | Edn::Str(k) | Edn::Symbol(k) => k.clone(),
                            other => other.to_string(),
                        };
                        (key, v.to_json())
                    })
                    .collect(),
            ),
        }
    }

    /// The value as EDN text, cut to about `max` characters for error messages (a
    /// mutated history can hold a megabyte in one form).
    pub fn short(&self, max: usize) -> String {
        let text = self.to_string();
        if text.chars().count() <= max {
            return text;
        }
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

impl fmt::Display for Edn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edn::Nil => write!(f, "nil"),
            Edn::Bool(b) => write!(f, "{b}"),
            Edn::Int(i) => write!(f, "{i}"),
            Edn::BigInt(d) => write!(f, "{d}N"),
            Edn::Float(x) => write!(f, "{x:?}"),
            Edn::Str(s) => write!(f, "{s:?}"),
            Edn::Char(c) => write!(f, "\\{c}"),
            Edn::Keyword(k) => write!(f, ":{k}"),
            Edn::Symbol(s) => write!(f, "{s}"),
            Edn::List(v) | Edn::Set(v) => {
                let (open, close) = match self {
                    Edn::Set(_) => ("#{", "}"),
                    _ => ("[", "]"),
                };
                write!(f, "{open}")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "{close}")
            }
            Edn::Map(m) => {
                write!(f, "{{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                write!(f, "}}")
            }
        }
    }
}

/// A parse error with the 1-based line it happened on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdnError {
    /// 1-based: where the reader stopped, or where the bad token or unclosed form began; an
    /// import error points there.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

#[cfg(test)]
mod tests;
