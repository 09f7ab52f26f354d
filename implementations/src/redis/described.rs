//! A user's own Redis protocol (a protocol file, or the builder) as a real lock: the
//! very steps the model explores, sent to a real server one by one (scripts by
//! `EVALSHA`, their source on `NOSCRIPT`), each reply read by the same patterns the
//! model reads it with ([`RedisProtocol::acquired`], [`RedisProtocol::released`]). What
//! it sent and heard is recorded like every lock's commands, and replayed against the
//! spec by the history's checks.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use locklab_models::protocol::redis::steps::{reply_text, Fill};
use locklab_models::protocol::{OnBusy, Outcome, RedisProtocol, TokenKind};

use super::handle::KeyHandle;
use super::node::{px, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::lock::{interned, DistributedLock, LockInfo};

/// A described protocol on one key.
#[derive(Clone, Debug)]
pub struct DescribedLock {
    handle: KeyHandle,
    protocol: Arc<RedisProtocol>,
    /// Its name in reports: a lock's info names its protocol for the process's life.
    name: &'static str,
}

impl DescribedLock {
    /// A handle on `key` following `protocol`; its `{token}` is as the protocol says
    /// (a fresh random owner for `unique`).
    pub fn new(node: &RedisNode, key: &str, protocol: Arc<RedisProtocol>) -> Self {
        let handle = match protocol.token {
            TokenKind::ThreadId => KeyHandle::with_owner(node, key, "t1".into()),
            TokenKind::Unique | TokenKind::Timestamp => KeyHandle::new(node, key),
        };
        let name = interned(&protocol.name);
        DescribedLock {
            handle,
            protocol,
            name,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The lease in milliseconds a step's `{lease_ms}` is (an unbounded lease has none:
/// 0, which a protocol with a TTL refuses before sending it).
fn lease_ms(lease: Lease) -> u64 {
    match lease {
        Lease::Fixed(d) | Lease::Watchdog(d) => px(d),
        Lease::Unbounded => 0,
    }
}

/// What one client fills a step's placeholders with.
#[derive(Clone, Debug)]
struct Filling {
    key: String,
    token: String,
    lease_ms: u64,
    /// The reply `{reply}` stands for: the last `next` step's, as the model keeps it.
    reply: String,
}

impl Filling {
    fn fill(&self) -> Fill<'_> {
        Fill {
            key: &self.key,
            token: &self.token,
            lease_ms: self.lease_ms,
            now_ms: now_ms(),
            reply: &self.reply,
        }
    }
}

/// The held lock: released (and renewed) by the protocol's steps.
struct DescribedHeld {
    handle: KeyHandle,
    protocol: Arc<RedisProtocol>,
    filling: Filling,
}

/// Runs the release steps: `Ok` released, `NotHeld` when a step said so.
async fn release(
    handle: &KeyHandle,
    protocol: &RedisProtocol,
    filling: &Filling,
) -> Result<(), LockError> {
    let mut filling = filling.clone();
    let mut stage = 0u8;
    loop {
        let fill = filling.fill();
        let Some(cmd) = protocol.release_command(stage, &fill) else {
            return Ok(());
        };
        let released = &handle.released;
        let reply = handle.node.exec_then(cmd, || released.notify_one()).await?;
        match protocol.released(stage, &reply, &filling.fill()) {
            Outcome::Next => {
                stage += 1;
                filling.reply = reply_text(&reply);
            }
            Outcome::NotHeld => return Err(handle.not_held()),
            _ => return Ok(()),
        }
    }
}

impl HeldLock for DescribedHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(release(&self.handle, &self.protocol, &self.filling))
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            if self.protocol.renew.is_empty() {
                return Err(LockError::Unsupported {
                    protocol: "a protocol file without renew steps",
                    what: "renewal",
                });
            }
            let mut filling = Filling {
                lease_ms: px(lease),
                ..self.filling.clone()
            };
            let mut stage = 0u8;
            loop {
                let fill = filling.fill();
                let Some(cmd) = self.protocol.renew_command(stage, &fill) else {
                    return Ok(());
                };
                let reply = self.handle.node.exec(cmd).await?;
                match self.protocol.renewed(stage, &reply, &filling.fill()) {
                    Outcome::Next => {
                        stage += 1;
                        filling.reply = reply_text(&reply);
                    }
                    Outcome::Renewed => return Ok(()),
                    _ => return Err(self.handle.not_held()),
                }
            }
        })
    }
}

impl DistributedLock for DescribedLock {
    fn info(&self) -> LockInfo {
        self.handle
            .info(self.name, self.protocol.reentrant, self.protocol.fences(), false)
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            if self.protocol.has_ttl() && lease == Lease::Unbounded {
                return Err(LockError::Unsupported {
                    protocol: self.name,
                    what: "an unbounded lease (its steps send {lease_ms})",
                });
            }
            let token = match self.protocol.token {
                TokenKind::Timestamp => now_ms().to_string(),
                _ => self.handle.owner.clone(),
            };
            let mut filling = Filling {
                key: self.handle.key.clone(),
                token,
                lease_ms: lease_ms(lease),
                reply: String::new(),
            };
            let sent_at = Instant::now();
            let mut stage = 0u8;
            loop {
                let fill = filling.fill();
                let Some(cmd) = self.protocol.acquire_command(stage, &fill) else {
                    return Ok(Attempt::busy());
                };
                let reply = self.handle.node.exec(cmd).await?;
                match self.protocol.acquired(stage, &reply, &filling.fill()) {
                    Outcome::Next => {
                        stage += 1;
                        filling.reply = reply_text(&reply);
                    }
                    Outcome::Granted => {
                        let token = self
                            .protocol
                            .token(stage, &reply)
                            .and_then(|t| u64::try_from(t).ok());
                        let held = Arc::new(DescribedHeld {
                            handle: self.handle.clone(),
                            protocol: Arc::clone(&self.protocol),
                            filling,
                        });
                        return Ok(self.handle.granted(self.name, token, held, lease, sent_at));
                    }
                    _ => {
                        if self.protocol.on_busy == OnBusy::Release {
                            // The `finally` of the write-ups: a release whatever the
                            // acquire said; its outcome is not the acquire's.
                            let _ = release(&self.handle, &self.protocol, &filling).await;
                        }
                        return Ok(Attempt::busy());
                    }
                }
            }
        })
    }

    fn local_release(&self) -> Option<&Notify> {
        Some(&self.handle.released)
    }
}
