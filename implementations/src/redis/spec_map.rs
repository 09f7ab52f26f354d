//! The recorded exchanges in the vocabulary of the Redis node spec
//! (`locklab_models::redis::spec`), and the replay that holds them against it.
//!
//! Only the *naming* is translated here (which script is which spec command, which
//! `ARGV` is the lease); what the commands do is the spec's business alone.

use locklab_models::redis::spec::{self as spec, RedisSpec, RedisState};
use locklab_models::spec::{Spec, Window};

use super::command::{Exchange, RedisCommand, RedisReply};
use super::scripts::LockScript;

impl RedisCommand {
    /// The spec's command, or `None` for a command the spec does not know.
    pub fn to_spec(&self) -> Option<spec::RedisCommand> {
        use spec::RedisCommand as S;
        Some(match self {
            RedisCommand::Get { key } => S::Get { key: key.clone() },
            RedisCommand::Set { key, value, nx, px } => S::Set {
                key: key.clone(),
                value: value.clone(),
                nx: *nx,
                px: *px,
            },
            RedisCommand::SetNx { key, value } => S::SetNx {
                key: key.clone(),
                value: value.clone(),
            },
            RedisCommand::Expire { key, seconds } => S::Expire {
                key: key.clone(),
                seconds: *seconds,
            },
            RedisCommand::Del { key } => S::Del { key: key.clone() },
            RedisCommand::Wait {
                replicas,
                timeout_ms,
            } => S::Wait {
                numreplicas: *replicas,
                timeout: *timeout_ms,
            },
            RedisCommand::Eval { script, keys, args } => {
                let key = keys.first()?.clone();
                let arg = |i: usize| args.get(i).cloned();
                let ms = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
                match script {
                    LockScript::CompareAndDelete => S::EvalCompareAndDelete {
                        key,
                        value: arg(0)?,
                    },
                    LockScript::CompareAndPexpire => S::EvalCompareAndRenew {
                        key,
                        value: arg(0)?,
                        px: ms(1)?,
                    },
                    LockScript::HashAcquire => S::EvalRedissonLock {
                        key,
                        field: arg(1)?,
                        px: ms(0)?,
                    },
                    LockScript::HashRelease => S::EvalRedissonUnlock {
                        key,
                        field: arg(1)?,
                        px: ms(0)?,
                    },
                    LockScript::HashRenew => S::EvalRedissonRenew {
                        key,
                        field: arg(1)?,
                        px: ms(0)?,
                    },
                    LockScript::CompareAndTransfer => S::EvalCompareAndTransfer {
                        key,
                        value: arg(0)?,
                        to: arg(1)?,
                        px: ms(2)?,
                    },
                    LockScript::FencedAcquire => S::EvalFencedAcquire {
                        key,
                        fence: keys.get(1)?.clone(),
                        value: arg(0)?,
                        px: ms(1)?,
                    },
                }
            }
        })
    }
}

impl RedisReply {
    /// The spec's reply (`None` for arrays, which no lock command returns).
    pub fn to_spec(&self) -> Option<spec::RedisReply> {
        use spec::RedisReply as S;
        Some(match self {
            RedisReply::Nil => S::Nil,
            RedisReply::Ok => S::Ok,
            RedisReply::Int(i) => S::Integer(*i),
            RedisReply::Str(s) => S::Bulk(s.clone()),
            RedisReply::Error(e) => S::Error(e.clone()),
            RedisReply::Array(_) => return None,
        })
    }
}

/// Where a recording and the spec part ways.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// The exchange has no spec counterpart.
    #[error("exchange {seq} ({command}) has no counterpart in the Redis spec")]
    Unmapped {
        /// The exchange's sequence number.
        seq: u64,
        /// The command as sent.
        command: String,
    },
    /// No state the spec allows at that point gives the reply the server gave.
    #[error(
        "exchange {seq}: {command} got {observed:?} from the server; the spec allows {allowed:?}"
    )]
    Mismatch {
        /// The exchange's sequence number.
        seq: u64,
        /// The command as sent.
        command: String,
        /// What the server answered.
        observed: spec::RedisReply,
        /// What the spec would have answered, over every state still possible.
        allowed: Vec<spec::RedisReply>,
    },
}

fn fenced(cmd: &spec::RedisCommand) -> bool {
    matches!(cmd, spec::RedisCommand::EvalFencedAcquire { .. })
}

/// `PTTL` counts down while a command is in flight, so a reply that reports it is exact
/// only for an instant; compare it within the command's window.
fn reports_pttl(cmd: &spec::RedisCommand) -> bool {
    matches!(
        cmd,
        spec::RedisCommand::EvalRedissonLock { .. }
            | spec::RedisCommand::EvalFencedAcquire { .. }
            | spec::RedisCommand::PTtl { .. }
    )
}

/// Replays the exchanges of one node (in sending order, none overlapping: one client
/// at a time) through the spec, starting from an empty node. Times are the recorder's,
/// in milliseconds: each command took effect somewhere in `[sent, done]`. An exchange
/// without reply (unknown outcome) may or may not have taken effect.
pub fn replay(exchanges: &[Exchange]) -> Result<(), ReplayError> {
    let mut states: Vec<RedisState> = vec![RedisSpec.init()];
    for e in exchanges {
        let unmapped = || ReplayError::Unmapped {
            seq: e.seq,
            command: e.command.render(),
        };
        let cmd = e.command.to_spec().ok_or_else(unmapped)?;
        let at = Window::between(e.sent_ns / 1_000_000, e.done_ns.div_ceil(1_000_000));
        let mut next: Vec<RedisState> = Vec::new();
        let mut allowed = Vec::new();
        let observed = match &e.reply {
            Some(r) => Some(r.to_spec().ok_or_else(unmapped)?),
            None => None,
        };
        for s in &states {
            if observed.is_none() {
                next.push(s.clone());
            }
            for (reply, after) in RedisSpec.step(s, &cmd, at) {
                let fits = match (&observed, &reply) {
                    (None, _) => true,
                    // A remaining lease is compared within the window; a fencing
                    // token (positive) must match exactly.
                    (Some(spec::RedisReply::Integer(o)), spec::RedisReply::Integer(p))
                        if reports_pttl(&cmd) && (*o < 0 || !fenced(&cmd)) =>
                    {
                        o.abs_diff(*p) <= at.hi - at.lo + 1
                    }
                    (Some(o), p) => o == p,
                };
                if fits {
                    if !next.contains(&after) {
                        next.push(after);
                    }
                } else {
                    allowed.push(reply);
                }
            }
        }
        if next.is_empty() {
            return Err(ReplayError::Mismatch {
                seq: e.seq,
                command: e.command.render(),
                observed: observed.unwrap_or(spec::RedisReply::Nil),
                allowed,
            });
        }
        states = next;
    }
    Ok(())
}
