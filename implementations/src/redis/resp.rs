//! RESP, the Redis wire protocol, read incrementally: requests (arrays of bulk strings,
//! or inline commands) and replies (RESP2, and the RESP3 types a `HELLO 3` client
//! gets). [`sniff`](super::sniff) reads a client's traffic with it.

/// One RESP value.
#[derive(Clone, Debug, PartialEq)]
pub enum Resp {
    /// `+text`.
    Simple(String),
    /// `-text`.
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$n` bytes, or `$-1` (`None`).
    Bulk(Option<Vec<u8>>),
    /// `*n` values, or `*-1` (`None`).
    Array(Option<Vec<Resp>>),
    /// RESP3 `_`.
    Null,
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `,`, `(`, `=` (double, big number, verbatim string): kept as text.
    Text(String),
    /// RESP3 `%` map, `~` set, `|` attributes: kept as their elements in order.
    Aggregate(Vec<Resp>),
    /// RESP3 `>`: a push message the server sends on its own, answering no request.
    Push(Vec<Resp>),
}

/// Why a byte stream is not RESP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Aggregates nested deeper than this are taken for garbage rather than parsed.
const MAX_DEPTH: usize = 64;

/// Bulk strings larger than this (Redis's own limit is 512 MB) are taken for garbage.
const MAX_BULK: usize = 64 << 20;

/// Bytes taken and not yet parsed into whole values.
#[derive(Debug, Default)]
pub struct Reader {
    buf: Vec<u8>,
    at: usize,
}

impl Reader {
    /// Takes more bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.at > 0 && self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole value, `None` until its last byte arrived.
    pub fn next_value(&mut self) -> Result<Option<Resp>, Malformed> {
        match parse(&self.buf[self.at..], 0)? {
            Some((v, used)) => {
                self.at += used;
                if self.at > 1 << 16 {
                    self.buf.drain(..self.at);
                    self.at = 0;
                }
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    /// The next whole request: an array of bulk strings, or an inline command (words
    /// on one line, as `redis-cli` over telnet sends them).
    pub fn next_request(&mut self) -> Result<Option<Vec<Vec<u8>>>, Malformed> {
        let rest = &self.buf[self.at..];
        match rest.first() {
            None => Ok(None),
            Some(b'*') => match self.next_value()? {
                None => Ok(None),
                Some(Resp::Array(Some(items))) => items
                    .into_iter()
                    .map(|i| match i {
                        Resp::Bulk(Some(b)) => Ok(b),
                        other => Err(Malformed(format!(
                            "a request's arguments are bulk strings, got {other:?}"
                        ))),
                    })
                    .collect::<Result<_, _>>()
                    .map(Some),
                Some(other) => Err(Malformed(format!("a request is an array, got {other:?}"))),
            },
            Some(_) => {
                let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                    return Ok(None);
                };
                let line = &rest[..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let words = line
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(<[u8]>::to_vec)
                    .collect();
                self.at += end + 1;
                Ok(Some(words))
            }
        }
    }
}

/// The line at the start of `buf` (without its CRLF) and the bytes it took.
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, Malformed> {
    match buf.windows(2).position(|w| w == b"\r\n") {
        Some(end) => Ok(Some((&buf[..end], end + 2))),
        None if buf.len() > 1 << 20 => Err(Malformed("a line of over 1 MiB".into())),
        None => Ok(None),
    }
}

fn number(text: &[u8]) -> Result<i64, Malformed> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| Malformed(format!("not a number: {:?}", String::from_utf8_lossy(text))))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One value at the start of `buf` and the bytes it took; `None` if incomplete.
fn parse(buf: &[u8], depth: usize) -> Result<Option<(Resp, usize)>, Malformed> {
    if depth > MAX_DEPTH {
        return Err(Malformed("nested too deep".into()));
    }
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    let Some((head, mut used)) = line(&buf[1..])? else {
        return Ok(None);
    };
    used += 1;
    let value = match kind {
        b'+' => Resp::Simple(text(head)),
        b'-' => Resp::Error(text(head)),
        b':' => Resp::Integer(number(head)?),
        b'_' => Resp::Null,
        b'#' => Resp::Boolean(head == b"t"),
        b',' | b'(' => Resp::Text(text(head)),
        b'$' | b'=' | b'!' => {
            let n = number(head)?;
            if n < 0 {
                if kind == b'$' {
                    Resp::Bulk(None)
                } else {
                    return Err(Malformed(format!("a negative length {n}")));
                }
            } else {
                let n = usize::try_from(n).map_err(|_| Malformed("a huge length".into()))?;
                if n > MAX_BULK {
                    return Err(Malformed(format!("a bulk string of {n} bytes")));
                }
                if buf.len() < used + n + 2 {
                    return Ok(None);
                }
                let body = &buf[used..used + n];
                if &buf[used + n..used + n + 2] != b"\r\n" {
                    return Err(Malformed("a bulk string without its CRLF".into()));
                }
                used += n + 2;
                match kind {
                    b'$' => Resp::Bulk(Some(body.to_vec())),
                    b'!' => Resp::Error(text(body)),
                    _ => Resp::Text(text(body)),
                }
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = number(head)?;
            if n < 0 {
                if kind == b'*' {
                    return Ok(Some((Resp::Array(None), used)));
                }
                return Err(Malformed(format!("a negative length {n}")));
            }
            let count = usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_mul(if matches!(kind, b'%' | b'|') { 2 } else { 1 }))
                .filter(|&n| n <= 1 << 24)
                .ok_or_else(|| Malformed(format!("an aggregate of {n} elements")))?;
            let mut items = Vec::with_capacity(count.min(1024));
            for _ in 0..count {
                match parse(&buf[used..], depth + 1)? {
                    Some((v, u)) => {
                        items.push(v);
                        used += u;
                    }
                    None => return Ok(None),
                }
            }
            match kind {
                b'*' => Resp::Array(Some(items)),
                b'>' => Resp::Push(items),
                b'|' => {
                    // Attributes come before the value they describe: that is the reply.
                    return Ok(parse(&buf[used..], depth + 1)?.map(|(v, u)| (v, used + u)));
                }
                _ => Resp::Aggregate(items),
            }
        }
        other => {
            return Err(Malformed(format!(
                "{:?} starts no RESP value",
                char::from(other)
            )))
        }
    };
    Ok(Some((value, used)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_values(bytes: &[u8]) -> Vec<Resp> {
        let mut r = Reader::default();
        let mut out = Vec::new();
        // Byte by byte: every split point of the stream must parse the same.
        for b in bytes {
            r.push(std::slice::from_ref(b));
            while let Some(v) = r.next_value().expect("RESP") {
                out.push(v);
            }
        }
        out
    }

    #[test]
    fn replies_parse_across_any_split() {
        let stream = b"+OK\r\n$-1\r\n:7\r\n$3\r\nab\n\r\n-ERR no\r\n*2\r\n$1\r\na\r\n:1\r\n_\r\n#t\r\n%1\r\n+k\r\n:2\r\n|1\r\n+ttl\r\n:3\r\n+v\r\n>2\r\n+invalidate\r\n*0\r\n";
        let v = all_values(stream);
        assert_eq!(
            v,
            vec![
                Resp::Simple("OK".into()),
                Resp::Bulk(None),
                Resp::Integer(7),
                Resp::Bulk(Some(b"ab\n".to_vec())),
                Resp::Error("ERR no".into()),
                Resp::Array(Some(vec![
                    Resp::Bulk(Some(b"a".to_vec())),
                    Resp::Integer(1)
                ])),
                Resp::Null,
                Resp::Boolean(true),
                Resp::Aggregate(vec![Resp::Simple("k".into()), Resp::Integer(2)]),
                Resp::Simple("v".into()),
                Resp::Push(vec![
                    Resp::Simple("invalidate".into()),
                    Resp::Array(Some(vec![]))
                ]),
            ]
        );
    }

    #[test]
    fn requests_are_arrays_of_bulk_strings_or_inline_lines() {
        let mut r = Reader::default();
        r.push(b"*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$2\r\nc0\r\nPING\r\n*1\r\n$3\r\nGE");
        assert_eq!(
            r.next_request().expect("ok"),
            Some(vec![b"SET".to_vec(), b"lock".to_vec(), b"c0".to_vec()])
        );
        assert_eq!(r.next_request().expect("ok"), Some(vec![b"PING".to_vec()]));
        assert_eq!(r.next_request().expect("ok"), None, "incomplete");
        r.push(b"T\r\n");
        assert_eq!(r.next_request().expect("ok"), Some(vec![b"GET".to_vec()]));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &b"?x\r\n"[..],
            b":nope\r\n",
            b"$3\r\nabcd\r\n",
            b"*99999999999\r\n",
        ] {
            let mut r = Reader::default();
            r.push(bad);
            assert!(
                r.next_value().is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
