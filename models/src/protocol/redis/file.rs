//! A Redis protocol file: TOML a user writes without Rust, read into the same builder
//! the Rust API uses, so both are checked alike. Every error names the file and the
//! line.
//!
//! ```toml
//! family = "redis"
//! name = "SET NX PX, release by compare-and-delete"
//! # attempts = 3               # tries per client in a model (default: no bound)
//!
//! [[acquire]]
//! send = "SET {key} {token} NX PX {lease_ms}"
//! granted = "OK"
//! busy = "nil"
//!
//! [[release]]
//! script = "unlock.lua"        # beside this file; or inline: lua = "…"
//! keys = ["{key}"]
//! args = ["{token}"]
//! released = "1"
//! not_held = "0"
//! ```

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::redis::spec::lua;

use super::steps::{OnBusy, Outcome, TokenKind};
use super::{RedisProtocol, StepBuilder};
use crate::protocol::file::{line_of, Patterns};
use crate::protocol::ProtocolError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    // The family-neutral reader chose this reader by it; Redlock's keys need it.
    family: Spanned<String>,
    name: Option<String>,
    // Redlock's: how many nodes must grant, the clock drift allowed.
    quorum: Option<Spanned<u8>>,
    drift: Option<Spanned<u64>>,
    token: Option<Spanned<String>>,
    reentrant: Option<bool>,
    on_busy: Option<Spanned<String>>,
    attempts: Option<Spanned<u8>>,
    #[serde(default)]
    acquire: Vec<Spanned<RawStep>>,
    #[serde(default)]
    release: Vec<Spanned<RawStep>>,
    #[serde(default)]
    renew: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    send: Option<String>,
    script: Option<Spanned<String>>,
    lua: Option<Spanned<String>>,
    keys: Option<Vec<String>>,
    args: Option<Vec<String>>,
    token: Option<bool>,
    granted: Option<Patterns>,
    busy: Option<Patterns>,
    next: Option<Patterns>,
    released: Option<Patterns>,
    not_held: Option<Patterns>,
    renewed: Option<Patterns>,
    lost: Option<Patterns>,
}

/// What a Redlock file says beside its steps (`None`: not written).
#[derive(Clone, Debug, Default)]
pub struct RedlockKeys {
    /// `quorum = N`, with its line.
    pub quorum: Option<(u8, String)>,
    /// `drift = N`, with its line.
    pub drift: Option<(u64, String)>,
}

/// Parses a Redis protocol file's `text` (`file` names it in errors); `read` fetches
/// a script by the name the file gives.
pub fn parse(
    file: &str,
    text: &str,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<RedisProtocol, ProtocolError> {
    parse_with_redlock(file, text, read).map(|(p, _)| p)
}

/// [`parse`], with the keys only a Redlock file (`family = "redlock"`) may write.
pub fn parse_with_redlock(
    file: &str,
    text: &str,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(RedisProtocol, RedlockKeys), ProtocolError> {
    let at = |span: Range<usize>| format!("{file}:{}", line_of(text, span.start));
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        ProtocolError::at(&format!("{file}:{line}"), e.message().trim().to_string())
    })?;
    let redlock = raw.family.get_ref() == "redlock";
    let keys = RedlockKeys {
        quorum: raw.quorum.as_ref().map(|q| (*q.get_ref(), at(q.span()))),
        drift: raw.drift.as_ref().map(|d| (*d.get_ref(), at(d.span()))),
    };
    if let (false, Some((_, line))) = (redlock, keys.quorum.as_ref()) {
        return Err(ProtocolError::at(
            line,
            "`quorum` is Redlock's: write `family = \"redlock\"` for a lock over several nodes"
                .into(),
        ));
    }
    if let (false, Some((_, line))) = (redlock, keys.drift.as_ref()) {
        return Err(ProtocolError::at(
            line,
            "`drift` is Redlock's: write `family = \"redlock\"` for a lock over several nodes"
                .into(),
        ));
    }
    let name = raw.name.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or("protocol".into(), |s| s.to_string_lossy().into_owned())
    });
    let mut b = RedisProtocol::builder(&name).reentrant(raw.reentrant.unwrap_or(false));
    if let Some(t) = &raw.token {
        b = b.token(match t.get_ref().as_str() {
            "unique" => TokenKind::Unique,
            "timestamp" => TokenKind::Timestamp,
            "thread-id" | "constant" => TokenKind::ThreadId,
            other => {
                return Err(ProtocolError::at(
                    &at(t.span()),
                    format!("token `{other}`: use unique, timestamp, thread-id or constant"),
                ))
            }
        });
    }
    if let Some(o) = &raw.on_busy {
        b = b.on_busy(match o.get_ref().as_str() {
            "retry" => OnBusy::Retry,
            "give-up" => OnBusy::GiveUp,
            "release" => OnBusy::Release,
            other => {
                return Err(ProtocolError::at(
                    &at(o.span()),
                    format!("on_busy `{other}`: use retry, give-up or release"),
                ))
            }
        });
    }
    if let Some(n) = &raw.attempts {
        if *n.get_ref() == 0 {
            return Err(ProtocolError::at(
                &at(n.span()),
                "attempts = 0: a client tries at least once (leave it out for no bound)".into(),
            ));
        }
        b = b.attempts(*n.get_ref());
    }
    let ops: [(&str, &Vec<Spanned<RawStep>>); 3] = [
        ("acquire", &raw.acquire),
        ("release", &raw.release),
        ("renew", &raw.renew),
    ];
    for (op, steps) in ops {
        for s in steps {
            let here = at(s.span());
            let step = step(s.get_ref(), &here, &at, read)?.at(&here);
            b = match op {
                "acquire" => b.acquire(step),
                "release" => b.release(step),
                _ => b.renew(step),
            };
        }
    }
    // What the builder finds of the whole file (no acquire step at all) has no line:
    // it is still this file's.
    let p = b.build().map_err(|mut e| {
        if e.at.is_empty() {
            e.at = file.to_string();
        }
        e
    })?;
    Ok((p, keys))
}

/// One `[[acquire]]`/`[[release]]`/`[[renew]]` table as a step.
fn step(
    s: &RawStep,
    here: &str,
    at: &dyn Fn(Range<usize>) -> String,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<StepBuilder, ProtocolError> {
    let strs = |v: &Option<Vec<String>>| -> Vec<String> { v.clone().unwrap_or_default() };
    let (keys, args) = (strs(&s.keys), strs(&s.args));
    let script = |source: &str, origin: &str, line_base: usize| {
        lua::check(source).map_err(|e| {
            ProtocolError::at(
                &format!("{origin}:{}", e.line + line_base),
                format!("{} (in the step at {here})", e.message),
            )
        })?;
        Ok::<_, ProtocolError>(StepBuilder::script(source, &refs(&keys), &refs(&args)))
    };
    let mut b = match (&s.send, &s.script, &s.lua) {
        (Some(words), None, None) => {
            if s.keys.is_some() || s.args.is_some() {
                return Err(ProtocolError::at(
                    here,
                    "`keys` and `args` go with a script; a `send` step writes them in its words".into(),
                ));
            }
            StepBuilder::send(words)
        }
        (None, Some(name), None) => {
            let source = read(name.get_ref())
                .map_err(|e| ProtocolError::at(&at(name.span()), format!("script: {e}")))?;
            let file = here.rsplit_once(':').map_or(here, |(f, _)| f);
            let origin = Path::new(file)
                .parent()
                .map_or_else(|| name.get_ref().clone(), |d| d.join(name.get_ref()).display().to_string());
            script(&source, &origin, 0)?
        }
        (None, None, Some(inline)) => {
            // An inline script's line 1 is the line after `lua = """`.
            let base = line_number(&at(inline.span()));
            script(inline.get_ref(), here.rsplit_once(':').map_or(here, |(f, _)| f), base)?
        }
        _ => {
            return Err(ProtocolError::at(
                here,
                "a step has exactly one of `send` (a command), `script` (a Lua file) or `lua` (inline Lua)".into(),
            ))
        }
    };
    if s.token == Some(true) {
        b = b.token();
    }
    let named = [
        (&s.granted, Outcome::Granted),
        (&s.busy, Outcome::Busy),
        (&s.next, Outcome::Next),
        (&s.released, Outcome::Released),
        (&s.not_held, Outcome::NotHeld),
        (&s.renewed, Outcome::Renewed),
        (&s.lost, Outcome::Lost),
    ];
    for (patterns, outcome) in named {
        if let Some(ps) = patterns {
            for p in ps.list() {
                b = b.on(p, outcome);
            }
        }
    }
    Ok(b)
}

fn line_number(at: &str) -> usize {
    at.rsplit_once(':')
        .and_then(|(_, l)| l.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
