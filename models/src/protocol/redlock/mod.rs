//! A user's Redlock: one Redis protocol's acquire step sent to each of N independent
//! nodes, granted with a quorum of grants and time left, released by its release step
//! on every node — Redlock's algorithm with the per-node commands (or Lua scripts) the
//! user wrote. The model runs it as [`crate::redlock::RedlockModel::protocol`].
//!
//! A file is a Redis protocol file (see [`crate::protocol::redis::file`]) with
//! `family = "redlock"` and two more keys: `quorum` (default: a majority of the
//! nodes) and `drift` (ticks taken off the validity, default 1, as the catalog's rows).

use crate::protocol::redis::file::parse_with_redlock;
use crate::protocol::redis::steps::TokenKind;
use crate::protocol::{OnBusy, ProtocolError, RedisProtocol};

pub mod check;

/// A Redlock protocol: the steps each node gets, and the algorithm's numbers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedlockProtocol {
    /// The per-node steps (one acquire step, one release step).
    pub steps: RedisProtocol,
    /// How many nodes must grant (`None`: a majority of those the check runs).
    pub quorum: Option<u8>,
    /// Ticks of clock drift taken off the validity.
    pub drift: u64,
    /// Attempts per client in a model (the file's `attempts`, 2 when unsaid, as the
    /// catalog's Redlock rows: a Redlock client's retries are bounded by its wait).
    pub attempts: u8,
}

impl RedlockProtocol {
    /// A Redlock of `steps` (one acquire step, one release step, no renewal).
    pub fn new(
        steps: RedisProtocol,
        quorum: Option<u8>,
        drift: u64,
    ) -> Result<Self, ProtocolError> {
        let first = |v: &[crate::protocol::redis::steps::Step]| {
            v.first().map(|s| s.at.clone()).unwrap_or_default()
        };
        let refuse = |at: String, m: &str| Err(ProtocolError::at(&at, m.to_string()));
        if steps.acquire.len() != 1 {
            return refuse(
                first(&steps.acquire[1..]),
                "a Redlock sends one acquire step to each node (a script, where it must check and set at once)",
            );
        }
        if steps.release.len() != 1 {
            return refuse(
                first(&steps.release[1..]),
                "a Redlock sends one release step to each node",
            );
        }
        if !steps.renew.is_empty() {
            return refuse(
                first(&steps.renew),
                "a Redlock is not renewed here: its validity is the lease less the time the acquire took",
            );
        }
        if steps.reentrant || steps.token != TokenKind::Unique || steps.uses_reply() {
            return refuse(
                first(&steps.acquire),
                "a Redlock client writes its own unique `{token}` on every node: no `reentrant`, `token` kind or `{reply}`",
            );
        }
        if steps.on_busy == OnBusy::Release {
            return refuse(
                first(&steps.acquire),
                "a Redlock releases on every node after a failed attempt anyway: `on_busy` is retry or give-up",
            );
        }
        if quorum == Some(0) {
            return refuse(
                first(&steps.acquire),
                "`quorum = 0` grants without any node",
            );
        }
        let attempts = match steps.on_busy {
            OnBusy::GiveUp => 1,
            _ => steps.attempts.unwrap_or(2),
        };
        Ok(RedlockProtocol {
            steps,
            quorum,
            drift,
            attempts,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.steps.name
    }
}

/// Parses a Redlock protocol file's `text`; `read` fetches a script by its name.
pub fn parse(
    file: &str,
    text: &str,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<RedlockProtocol, ProtocolError> {
    let (steps, keys) = parse_with_redlock(file, text, read)?;
    if let Some((0, line)) = &keys.quorum {
        return Err(ProtocolError::at(
            line,
            "`quorum = 0` grants without any node".into(),
        ));
    }
    RedlockProtocol::new(
        steps,
        keys.quorum.map(|q| q.0),
        keys.drift.map_or(1, |d| d.0),
    )
    .map_err(|mut e| {
        if e.at.is_empty() {
            e.at = file.to_string();
        }
        e
    })
}
