//! An atom by its Clojure spelling: nil, booleans, numbers (with the `N`/`M`
//! suffixes, ratios, hex and octal), keywords and symbols.

use super::*;

/// The value a token spells, or what is wrong with it.
pub(super) fn atom(text: &str) -> Result<Edn, String> {
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
