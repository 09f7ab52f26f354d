//! The reader: EDN text to [`Edn`] values one after another, counting lines, with
//! nesting bounded by [`MAX_DEPTH`].

use super::*;

use super::atom::atom;

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
