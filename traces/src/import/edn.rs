//! A small EDN reader: enough of the format for Jepsen histories (nil, booleans,
//! numbers, strings, keywords, symbols, vectors, lists, maps, sets, `#tag` values).

use std::fmt;

/// An EDN value.
#[derive(Clone, Debug, PartialEq)]
pub enum Edn {
    /// `nil`
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// `:keyword` (without the colon).
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

    /// The value as JSON: keywords become strings, maps objects, lists arrays.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Edn::Nil => Value::Null,
            Edn::Bool(b) => Value::Bool(*b),
            Edn::Int(i) => Value::from(*i),
            Edn::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Edn::Str(s) | Edn::Symbol(s) => Value::String(s.clone()),
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
}

impl fmt::Display for Edn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edn::Nil => write!(f, "nil"),
            Edn::Bool(b) => write!(f, "{b}"),
            Edn::Int(i) => write!(f, "{i}"),
            Edn::Float(x) => write!(f, "{x}"),
            Edn::Str(s) => write!(f, "{s:?}"),
            Edn::Keyword(k) => write!(f, ":{k}"),
            Edn::Symbol(s) => write!(f, "{s}"),
            Edn::List(v) | Edn::Set(v) => {
                write!(f, "[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "]")
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
    text: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `text`.
    pub fn new(text: &'a str) -> Self {
        Reader {
            text: text.as_bytes(),
            pos: 0,
            line: 1,
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

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// Skips whitespace, commas and `;` comments.
    pub fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() || c == b',' {
                self.bump();
            } else if c == b';' {
                while let Some(c) = self.bump() {
                    if c == b'\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_space();
        self.peek().is_none()
    }

    /// Peeks at the next significant byte.
    pub fn next_byte(&mut self) -> Option<u8> {
        self.skip_space();
        self.peek()
    }

    /// Consumes one byte (after [`Reader::next_byte`] said what it is).
    pub fn take_byte(&mut self) -> Option<u8> {
        self.bump()
    }

    /// Reads one value.
    pub fn value(&mut self) -> Result<Edn, EdnError> {
        self.skip_space();
        let Some(c) = self.peek() else {
            return self.err("truncated: the input ends where a value was expected");
        };
        match c {
            b'{' => {
                self.bump();
                let items = self.seq(b'}')?;
                if items.len() % 2 != 0 {
                    return self.err("a map needs an even number of forms (key value pairs)");
                }
                let mut it = items.into_iter();
                let mut m = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    m.push((k, v));
                }
                Ok(Edn::Map(m))
            }
            b'[' => {
                self.bump();
                Ok(Edn::List(self.seq(b']')?))
            }
            b'(' => {
                self.bump();
                Ok(Edn::List(self.seq(b')')?))
            }
            b'#' => {
                self.bump();
                match self.peek() {
                    Some(b'{') => {
                        self.bump();
                        Ok(Edn::Set(self.seq(b'}')?))
                    }
                    Some(b'_') => {
                        self.bump();
                        self.value()?;
                        self.value()
                    }
                    _ => {
                        // A tagged literal (#inst "…", #jepsen.Foo{…}): keep the value.
                        self.atom_text();
                        self.value()
                    }
                }
            }
            b'"' => self.string(),
            b'}' | b']' | b')' => self.err(format!("unexpected '{}'", c as char)),
            _ => {
                let text = self.atom_text();
                Ok(atom(&text))
            }
        }
    }

    fn seq(&mut self, close: u8) -> Result<Vec<Edn>, EdnError> {
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None => return self.err(format!("truncated: missing '{}'", close as char)),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                Some(_) => items.push(self.value()?),
            }
        }
    }

    fn string(&mut self) -> Result<Edn, EdnError> {
        self.bump();
        let mut out = Vec::new();
        loop {
            match self.bump() {
                None => return self.err("truncated: unterminated string"),
                Some(b'"') => break,
                Some(b'\\') => match self.bump() {
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    Some(b'r') => out.push(b'\r'),
                    Some(c) => out.push(c),
                    None => return self.err("truncated: unterminated string"),
                },
                Some(c) => out.push(c),
            }
        }
        Ok(Edn::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn atom_text(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() || b",{}[]()\"".contains(&c) {
                break;
            }
            self.bump();
        }
        String::from_utf8_lossy(&self.text[start..self.pos]).into_owned()
    }
}

fn atom(text: &str) -> Edn {
    match text {
        "nil" => Edn::Nil,
        "true" => Edn::Bool(true),
        "false" => Edn::Bool(false),
        _ => {
            if let Some(k) = text.strip_prefix(':') {
                return Edn::Keyword(k.to_string());
            }
            let digits = text.trim_end_matches(['N', 'M']);
            if let Ok(i) = digits.parse::<i64>() {
                return Edn::Int(i);
            }
            if let Ok(f) = digits.parse::<f64>() {
                if digits.chars().any(|c| c.is_ascii_digit()) {
                    return Edn::Float(f);
                }
            }
            Edn::Symbol(text.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_jepsen_op() {
        let mut r = Reader::new(r#"{:process 1, :type :ok, :f :cas, :value [1 2], :key "k\"x"}"#);
        let v = r.value().expect("parses");
        assert_eq!(v.get("process"), Some(&Edn::Int(1)));
        assert_eq!(v.get("f").and_then(Edn::keyword), Some("cas"));
        assert_eq!(
            v.get("value"),
            Some(&Edn::List(vec![Edn::Int(1), Edn::Int(2)]))
        );
        assert_eq!(v.get("key"), Some(&Edn::Str("k\"x".into())));
    }

    #[test]
    fn truncation_is_an_error_not_a_panic() {
        for bad in ["{:a 1", "[1 2", "\"abc", "{:a}", ")"] {
            assert!(Reader::new(bad).value().is_err(), "{bad}");
        }
    }
}
