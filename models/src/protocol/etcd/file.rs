//! An etcd protocol file: TOML whose requests are written as run histories record
//! them, read into the same builder the Rust API uses. Every error names the file and
//! the line.
//!
//! ```toml
//! family = "etcd"
//! name = "one key, guarded release"
//! lease = true                 # a session lease, kept alive while the client runs
//! # fencing = true             # the resource checks {rev}
//! # on_busy = "retry"          # or "give-up", "release"
//! # attempts = 3               # tries per client in a model (default: no bound)
//!
//! [[acquire]]
//! granted = "succeeded"
//! busy = "failed"
//! [acquire.send.txn]
//! compare = [{ create-revision = { key = "{key}", rev = 0 } }]
//! success = [{ put = { key = "{key}", value = "{token}", lease = "{lease}" } }]
//!
//! [[release]]
//! released = "succeeded"
//! not_held = "failed"
//! [release.send.txn]
//! compare = [{ create-revision = { key = "{key}", rev = "{rev}" } }]
//! success = [{ delete = { key = "{key}" } }]
//! ```

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{EtcdProtocol, EtcdStepBuilder};
use crate::protocol::file::{line_of, Patterns};
use crate::protocol::outcome::{OnBusy, Outcome};
use crate::protocol::ProtocolError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    // Read by the family-neutral reader, which chose this one.
    #[serde(rename = "family")]
    _family: String,
    name: Option<String>,
    lease: Option<bool>,
    fencing: Option<bool>,
    on_busy: Option<Spanned<String>>,
    attempts: Option<Spanned<u8>>,
    #[serde(default)]
    acquire: Vec<Spanned<RawStep>>,
    #[serde(default)]
    release: Vec<Spanned<RawStep>>,
    #[serde(default)]
    renew: Vec<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    send: Option<toml::Value>,
    granted: Option<Patterns>,
    busy: Option<Patterns>,
    next: Option<Patterns>,
    released: Option<Patterns>,
    not_held: Option<Patterns>,
}

/// Parses an etcd protocol file's `text` (`file` names it in errors).
pub fn parse(file: &str, text: &str) -> Result<EtcdProtocol, ProtocolError> {
    let at = |start: usize| format!("{file}:{}", line_of(text, start));
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        ProtocolError::at(&format!("{file}:{line}"), e.message().trim().to_string())
    })?;
    if let Some(r) = raw.renew.first() {
        return Err(ProtocolError::at(
            &at(r.span().start),
            "an etcd lock is renewed by its session lease's keep-alives: write `lease = true`, not renew steps".into(),
        ));
    }
    let name = raw.name.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or("protocol".into(), |s| s.to_string_lossy().into_owned())
    });
    let mut b = EtcdProtocol::builder(&name)
        .lease(raw.lease.unwrap_or(false))
        .fencing(raw.fencing.unwrap_or(false));
    if let Some(o) = &raw.on_busy {
        b = b.on_busy(match o.get_ref().as_str() {
            "retry" => OnBusy::Retry,
            "give-up" => OnBusy::GiveUp,
            "release" => OnBusy::Release,
            other => {
                return Err(ProtocolError::at(
                    &at(o.span().start),
                    format!("on_busy `{other}`: use retry, give-up or release"),
                ))
            }
        });
    }
    if let Some(n) = &raw.attempts {
        if *n.get_ref() == 0 {
            return Err(ProtocolError::at(
                &at(n.span().start),
                "attempts = 0: a client tries at least once (leave it out for no bound)".into(),
            ));
        }
        b = b.attempts(*n.get_ref());
    }
    for (release, steps) in [(false, &raw.acquire), (true, &raw.release)] {
        for s in steps {
            let here = at(s.span().start);
            let step = step(s.get_ref(), &here)?.at(&here);
            b = if release {
                b.release(step)
            } else {
                b.acquire(step)
            };
        }
    }
    b.build().map_err(|mut e| {
        if e.at.is_empty() {
            e.at = file.to_string();
        }
        e
    })
}

/// One `[[acquire]]`/`[[release]]` table as a step.
fn step(s: &RawStep, here: &str) -> Result<EtcdStepBuilder, ProtocolError> {
    let Some(send) = &s.send else {
        return Err(ProtocolError::at(
            here,
            "a step needs `send`: the request, e.g. `send = { get = { key = \"{key}\" } }`".into(),
        ));
    };
    let mut b = EtcdStepBuilder::request(send);
    let named = [
        (&s.granted, Outcome::Granted),
        (&s.busy, Outcome::Busy),
        (&s.next, Outcome::Next),
        (&s.released, Outcome::Released),
        (&s.not_held, Outcome::NotHeld),
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
