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
    /// The line.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

/// Reads EDN values one after another, tracking lines.
pub struct Reader<'a> {
    src: &'a str,
    text: &'a [u8],
    pos: usize,
    line: usize,
    depth: usize,
}

/// Bytes that end a symbol, keyword or number (Clojure's terminating macro characters
/// that EDN keeps, and whitespace).
fn ends_token(c: u8) -> bool {
    c.is_ascii_whitespace() || b",{}[]()\";\\".contains(&c)
}

impl<'a> Reader<'a> {
    /// A reader over `text`.
    pub fn new(text: &'a str) -> Self {
        Reader {
            src: text,
            text: text.as_bytes(),
            pos: 0,
            line: 1,
            depth: 0,
        }
    }

    /// The current line.
    pub fn line(&self) -> usize {
        self.line
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, EdnError> {
        Err(EdnError {
            line: self.line,
            message: message.into(),
        })
    }

    fn err_at<T>(line: usize, message: impl Into<String>) -> Result<T, EdnError> {
        Err(EdnError {
            line,
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// The next whole character (the input is UTF-8; a byte position after an ASCII
    /// byte is always on a character boundary).
    fn bump_char(&mut self) -> Option<char> {
        let c = self.src.get(self.pos..)?.chars().next()?;
        for _ in 0..c.len_utf8() {
            self.bump();
        }
        Some(c)
    }

    /// Skips whitespace, commas, `;` comments and `#_` discarded forms.
    pub fn skip_space(&mut self) -> Result<(), EdnError> {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() || c == b',' {
                self.bump();
            } else if c == b';' {
                while let Some(c) = self.bump() {
                    if c == b'\n' {
                        break;
                    }
                }
            } else if c == b'#' && self.peek_at(1) == Some(b'_') {
                // Through `value`, never a loop or call of its own: `#_ #_ a b` discards
                // both forms, and a run of discards counts towards the depth bound.
                self.bump();
                self.bump();
                self.value()?;
            } else {
                break;
            }
        }
        Ok(())
    }

    /// Whether only whitespace, comments and discarded forms are left.
    pub fn at_end(&mut self) -> Result<bool, EdnError> {
        self.skip_space()?;
        Ok(self.peek().is_none())
    }

    /// Peeks at the next significant byte.
    pub fn next_byte(&mut self) -> Result<Option<u8>, EdnError> {
        self.skip_space()?;
        Ok(self.peek())
    }

    /// Consumes one byte (after [`Reader::next_byte`] said what it is).
    pub fn take_byte(&mut self) -> Option<u8> {
        self.bump()
    }

    /// Reads one value.
    pub fn value(&mut self) -> Result<Edn, EdnError> {
        if self.depth >= MAX_DEPTH {
            return self.err(format!(
                "forms nested more than {MAX_DEPTH} levels deep (collections, tags and discards)"
            ));
        }
        self.depth += 1;
        let v = self.value_here();
        self.depth -= 1;
        v
    }

    fn value_here(&mut self) -> Result<Edn, EdnError> {
        self.skip_space()?;
        let Some(c) = self.peek() else {
            return self.err("truncated: the input ends where a value was expected");
        };
        let line = self.line;
        match c {
            b'{' => {
                self.bump();
                let items = self.seq(b'}', '{', line)?;
                Self::map(items, line)
            }
            b'[' => {
                self.bump();
                Ok(Edn::List(self.seq(b']', '[', line)?))
            }
            b'(' => {
                self.bump();
                Ok(Edn::List(self.seq(b')', '(', line)?))
            }
            b'#' => {
                self.bump();
                self.dispatch(line)
            }
            b'"' => self.string(),
            b'\\' => self.character(),
            b'}' | b']' | b')' => self.err(format!("unexpected '{}'", c as char)),
            _ => {
                let text = self.token();
                atom(&text).or_else(|m| Self::err_at(line, m))
            }
        }
    }

    /// What follows a `#` (other than `#_`, which [`Reader::skip_space`] handles).
    fn dispatch(&mut self, line: usize) -> Result<Edn, EdnError> {
        match self.peek() {
            None => self.err("truncated: '#' at the end of the input"),
            Some(b'{') => {
                self.bump();
                Ok(Edn::Set(self.seq(b'}', '{', line)?))
            }
            Some(b'#') => {
                self.bump();
                match self.token().as_str() {
                    "Inf" => Ok(Edn::Float(f64::INFINITY)),
                    "-Inf" => Ok(Edn::Float(f64::NEG_INFINITY)),
                    "NaN" => Ok(Edn::Float(f64::NAN)),
                    other => self.err(format!(
                        "unknown symbolic value ##{other} (expected ##Inf, ##-Inf or ##NaN)"
                    )),
                }
            }
            Some(b':') => {
                // `#:ns{:a 1}` is `{:ns/a 1}` (Clojure prints namespaced maps this way).
                self.bump();
                let ns = self.token();
                if ns.is_empty() || ns.starts_with(':') {
                    return self.err("#: needs a namespace (auto-resolved #:: maps are not EDN)");
                }
                self.skip_space()?;
                if self.peek() != Some(b'{') {
                    return self.err(format!("#:{ns} must be followed by a map"));
                }
                let open = self.line;
                self.bump();
                let items = self.seq(b'}', '{', open)?;
                let Edn::Map(entries) = Self::map(items, open)? else {
                    return self.err("#: must be followed by a map");
                };
                let entries = entries
                    .into_iter()
                    .map(|(k, v)| match k {
                        Edn::Keyword(name) if name.starts_with("_/") => {
                            (Edn::Keyword(name[2..].to_string()), v)
                        }
                        Edn::Keyword(name) if !name.contains('/') => {
                            (Edn::Keyword(format!("{ns}/{name}")), v)
                        }
                        other => (other, v),
                    })
                    .collect();
                Ok(Edn::Map(entries))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                // A tagged value (`#inst "…"`, `#jepsen.history.Op{…}`): the tag names a
                // type, the value is what a history means by it.
                let tag = self.token();
                self.skip_space()?;
                if self.peek().is_none() {
                    return Self::err_at(line, format!("truncated: the tag #{tag} has no value"));
                }
                self.value()
            }
            Some(c) => self.err(format!(
                "'#{}' is not EDN (expected #{{…}}, #_, #tag, ##Inf or #:ns{{…}})",
                c as char
            )),
        }
    }

    fn map(items: Vec<Edn>, line: usize) -> Result<Edn, EdnError> {
        if !items.len().is_multiple_of(2) {
            return Self::err_at(
                line,
                format!(
                    "a map needs key value pairs, and the map opened on line {line} has {} forms",
                    items.len()
                ),
            );
        }
        let mut seen: HashSet<String> = HashSet::new();
        let mut it = items.into_iter();
        let mut m = Vec::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            if let Edn::Keyword(name) = &k {
                if !seen.insert(name.clone()) {
                    return Self::err_at(
                        line,
                        format!("duplicate key :{name} in the map opened on line {line}"),
                    );
                }
            }
            m.push((k, v));
        }
        Ok(Edn::Map(m))
    }

    fn seq(&mut self, close: u8, open: char, open_line: usize) -> Result<Vec<Edn>, EdnError> {
        let mut items = Vec::new();
        loop {
            self.skip_space()?;
            match self.peek() {
                None => {
                    return Self::err_at(
                        open_line,
                        format!(
                            "truncated: the '{open}' opened on line {open_line} is never closed"
                        ),
                    )
                }
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                Some(c @ (b'}' | b']' | b')')) => {
                    return self.err(format!(
                        "unexpected '{}': the '{open}' opened on line {open_line} closes with '{}'",
                        c as char, close as char
                    ))
                }
                Some(_) => items.push(self.value()?),
            }
        }
    }

    fn string(&mut self) -> Result<Edn, EdnError> {
        let start = self.line;
        let unterminated = || {
            Self::err_at(
                start,
                format!("truncated: the string opened on line {start} is never closed"),
            )
        };
        self.bump();
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote or backslash whole: both are ASCII, so
            // the run is valid UTF-8 on its own.
            let run_start = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' {
                    break;
                }
                self.bump();
            }
            out.push_str(self.src.get(run_start..self.pos).unwrap_or_default());
            match self.bump() {
                None => return unterminated(),
                Some(b'"') => break,
                _ => {}
            }
            let Some(e) = self.peek() else {
                return unterminated();
            };
            self.bump();
            match e {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'u' => {
                    let unit = self.hex4()?;
                    out.push(self.utf16(unit)?);
                }
                b'0'..=b'7' => {
                    let mut n = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                self.bump();
                                n = n * 8 + u32::from(d - b'0');
                            }
                            _ => break,
                        }
                    }
                    match char::from_u32(n).filter(|_| n <= 0o377) {
                        Some(c) => out.push(c),
                        None => return self.err("octal escape past \\377 in a string"),
                    }
                }
                other => {
                    return self.err(format!(
                        "unsupported escape '\\{}' in a string",
                        other.escape_ascii()
                    ))
                }
            }
        }
        Ok(Edn::Str(out))
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Result<u32, EdnError> {
        let mut n = 0u32;
        for _ in 0..4 {
            match self.peek().and_then(|c| (c as char).to_digit(16)) {
                Some(d) => {
                    self.bump();
                    n = n * 16 + d;
                }
                None => return self.err("a \\u escape needs four hex digits"),
            }
        }
        Ok(n)
    }

    /// A UTF-16 unit, joined with the low surrogate that follows a high one; a lone
    /// surrogate (Java strings may hold one) becomes U+FFFD.
    fn utf16(&mut self, unit: u32) -> Result<char, EdnError> {
        if (0xD800..0xDC00).contains(&unit)
            && self.peek() == Some(b'\\')
            && self.peek_at(1) == Some(b'u')
        {
            let save = (self.pos, self.line);
            self.bump();
            self.bump();
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{FFFD}'));
            }
            (self.pos, self.line) = save;
        }
        Ok(char::from_u32(unit).unwrap_or('\u{FFFD}'))
    }

    fn character(&mut self) -> Result<Edn, EdnError> {
        self.bump();
        let Some(first) = self.bump_char() else {
            return self.err("truncated: '\\' at the end of the input (a character literal)");
        };
        if !first.is_ascii_alphanumeric() {
            return Ok(Edn::Char(first));
        }
        let rest = self.token();
        if rest.is_empty() {
            return Ok(Edn::Char(first));
        }
        let name = format!("{first}{rest}");
        let c = match name.as_str() {
            "newline" => Some('\n'),
            "space" => Some(' '),
            "tab" => Some('\t'),
            "return" => Some('\r'),
            "backspace" => Some('\u{8}'),
            "formfeed" => Some('\u{c}'),
            _ if first == 'u' && rest.len() == 4 => {
                u32::from_str_radix(&rest, 16).ok().and_then(char::from_u32)
            }
            _ if first == 'o' && (1..=3).contains(&rest.len()) => u32::from_str_radix(&rest, 8)
                .ok()
                .filter(|n| *n <= 0o377)
                .and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) => Ok(Edn::Char(c)),
            None => self.err(format!("unsupported character literal \\{name}")),
        }
    }

    /// The text of a symbol, keyword or number.
    fn token(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if ends_token(c) {
                break;
            }
            self.bump();
        }
        self.src
            .get(start..self.pos)
            .unwrap_or_default()
            .to_string()
    }
}

fn atom(text: &str) -> Result<Edn, String> {
    match text {
        "nil" => return Ok(Edn::Nil),
        "true" => return Ok(Edn::Bool(true)),
        "false" => return Ok(Edn::Bool(false)),
        "" => return Err("unexpected character".to_string()),
        _ => {}
    }
    if let Some(k) = text.strip_prefix(':') {
        // `::k` is Clojure's auto-resolved keyword; outside Clojure it can only mean :k.
        let k = k.strip_prefix(':').unwrap_or(k);
        if k.is_empty() {
            return Err(format!("'{text}' is not a keyword: a keyword needs a name"));
        }
        return Ok(Edn::Keyword(k.to_string()));
    }
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if unsigned.starts_with(|c: char| c.is_ascii_digit()) {
        return number(text).ok_or_else(|| format!("invalid number {text}"));
    }
    Ok(Edn::Symbol(text.to_string()))
}

/// A number as Clojure's reader reads it.
fn number(text: &str) -> Option<Edn> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let sign = if negative { "-" } else { "" };
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(d) = unsigned.strip_suffix('N') {
        return digits_only(d).then(|| integer(sign, d));
    }
    if let Some(d) = unsigned.strip_suffix('M') {
        return float(d).map(|f| Edn::Float(if negative { -f } else { f }));
    }
    if let Some((n, d)) = unsigned.split_once('/') {
        if !digits_only(n) || !digits_only(d) {
            return None;
        }
        let (n, d): (f64, f64) = (n.parse().ok()?, d.parse().ok()?);
        if d == 0.0 {
            return None;
        }
        return Some(Edn::Float(if negative { -n / d } else { n / d }));
    }
    if let Some(h) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        let v = i64::from_str_radix(h, 16).ok()?;
        return Some(Edn::Int(if negative { -v } else { v }));
    }
    if digits_only(unsigned) {
        if unsigned.len() > 1 && unsigned.starts_with('0') {
            // Clojure reads a leading zero as octal.
            let v = i64::from_str_radix(&unsigned[1..], 8).ok()?;
            return Some(Edn::Int(if negative { -v } else { v }));
        }
        return Some(integer(sign, unsigned));
    }
    float(unsigned).map(|f| Edn::Float(if negative { -f } else { f }))
}

fn integer(sign: &str, digits: &str) -> Edn {
    let text = format!("{sign}{digits}");
    match text.parse::<i64>() {
        Ok(i) => Edn::Int(i),
        Err(_) => {
            let trimmed = digits.trim_start_matches('0');
            Edn::BigInt(format!(
                "{sign}{}",
                if trimmed.is_empty() { "0" } else { trimmed }
            ))
        }
    }
}

/// A decimal float: digits, an optional fraction and exponent (not Rust's `inf`/`nan`).
fn float(s: &str) -> Option<f64> {
    let ok = s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if ok {
        s.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
