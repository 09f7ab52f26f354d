//! `redlock`: antirez's Redlock over N independent nodes.
//!
//! 1. Note the time, send `SET k o NX PX ttl` to every node at once, each bounded by the
//!    node's response timeout (keep it small next to the TTL).
//! 2. Granted when a majority said `OK` and the validity left,
//!    `ttl − elapsed − drift` (drift = 1 % of the TTL + 2 ms), is positive.
//! 3. Otherwise send the compare-and-delete to *every* node (a node that timed out may
//!    still have set the key) and fail; the acquire loop retries after a random delay,
//!    which de-synchronises competing clients.
//!
//! Release: compare-and-delete on every node. Renew: compare-and-pexpire on every node,
//! good when a majority renewed. No fencing token: Redlock cannot produce one, which is
//! why a client paused past its validity breaks it (`redlock-pause`).

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::handle::random_owner;
use super::key_commands::require_ttl;
use super::node::{px, RedisNode};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::LockGuard;
use crate::held_lock::HeldLock;
use crate::lease::Lease;
use crate::lock::{interned, DistributedLock, LockInfo};
use crate::ownership::drift;
use locklab_models::protocol::redis::steps::Fill;
use locklab_models::protocol::{Outcome, RedlockProtocol};
use locklab_models::redis::spec::{RedisCommand, RedisReply};

/// The catalog id.
pub const PROTOCOL: &str = ScenarioId::Redlock.name();

/// A Redlock handle over independent nodes.
#[derive(Clone, Debug)]
pub struct Redlock {
    nodes: Arc<[RedisNode]>,
    key: String,
    owner: String,
    steps: Option<Described>,
}

/// A user's Redlock ([`RedlockProtocol`]) and its name for reports.
#[derive(Clone, Debug)]
struct Described {
    protocol: Arc<RedlockProtocol>,
    name: &'static str,
}

impl Redlock {
    /// A handle on `key` over `nodes` (an odd number, usually 5), with a fresh owner.
    pub fn new(nodes: &[RedisNode], key: &str) -> Result<Self, LockError> {
        if nodes.is_empty() {
            return Err(LockError::InvalidConfig(
                "Redlock needs at least one node".into(),
            ));
        }
        Ok(Redlock {
            nodes: nodes.to_vec().into(),
            key: key.to_string(),
            owner: random_owner(),
            steps: None,
        })
    }

    /// A Redlock over `nodes` sending a user's per-node steps (a protocol file's,
    /// `family = "redlock"`): its acquire step to every node, its quorum, its release
    /// step to every node — the steps its model sends.
    pub fn described(
        nodes: &[RedisNode],
        key: &str,
        protocol: Arc<RedlockProtocol>,
    ) -> Result<Self, LockError> {
        let name = interned(protocol.name());
        Ok(Redlock {
            steps: Some(Described { protocol, name }),
            ..Redlock::new(nodes, key)?
        })
    }

    /// Nodes needed for a grant: a strict majority, or a user's quorum.
    pub fn quorum(&self) -> usize {
        self.steps
            .as_ref()
            .and_then(|d| d.protocol.quorum)
            .map_or(self.nodes.len() / 2 + 1, usize::from)
    }

    fn name(&self) -> &'static str {
        self.steps.as_ref().map_or(PROTOCOL, |d| d.name)
    }

    /// How this handle's steps are sent and read, for a lease of `ttl`.
    fn grants(&self, ttl: Duration) -> Grants {
        match &self.steps {
            None => Grants::Catalog,
            Some(d) => Grants::Steps(Arc::clone(&d.protocol), ttl),
        }
    }

    /// Sends `command` to every node at once; the replies (or errors) by node index.
    async fn broadcast(&self, command: RedisCommand) -> Vec<Result<RedisReply, LockError>> {
        broadcast(&self.nodes, command).await
    }
}

/// What a user's step is filled with: the lock, the owner, the lease.
fn fill<'a>(key: &'a str, owner: &'a str, ttl: Duration) -> Fill<'a> {
    Fill {
        key,
        token: owner,
        lease_ms: px(ttl),
        now_ms: 0,
        reply: "",
    }
}

/// How each node is asked and its reply read: the catalog's `SET NX PX` and
/// compare-and-delete, or a user's steps and patterns.
enum Grants {
    /// `OK` grants; the compare-and-delete frees with 1.
    Catalog,
    /// A user's steps, for this lease.
    Steps(Arc<RedlockProtocol>, Duration),
}

impl Grants {
    /// The acquire each node gets (`None`: the step's words are no command).
    fn acquire(&self, key: &str, owner: &str, ttl: Duration) -> Option<RedisCommand> {
        match self {
            Grants::Catalog => Some(RedisCommand::Set {
                key: key.to_string(),
                value: owner.to_string(),
                nx: true,
                px: Some(px(ttl)),
            }),
            Grants::Steps(p, ttl) => p.steps.acquire_command(0, &fill(key, owner, *ttl)),
        }
    }

    fn granted(&self, key: &str, owner: &str, reply: &RedisReply) -> bool {
        match self {
            Grants::Catalog => *reply == RedisReply::Ok,
            Grants::Steps(p, ttl) => {
                p.steps.acquired(0, reply, &fill(key, owner, *ttl)) == Outcome::Granted
            }
        }
    }

    /// The release each node gets.
    fn release(&self, key: &str, owner: &str) -> Option<RedisCommand> {
        match self {
            Grants::Catalog => Some(compare_and_delete(key, owner)),
            Grants::Steps(p, ttl) => p.steps.release_command(0, &fill(key, owner, *ttl)),
        }
    }

    fn released(&self, key: &str, owner: &str, reply: &RedisReply) -> bool {
        match self {
            Grants::Catalog => *reply == RedisReply::Integer(1),
            Grants::Steps(p, ttl) => {
                p.steps.released(0, reply, &fill(key, owner, *ttl)) == Outcome::Released
            }
        }
    }
}

async fn broadcast(
    nodes: &[RedisNode],
    command: RedisCommand,
) -> Vec<Result<RedisReply, LockError>> {
    let mut set = JoinSet::new();
    for (i, node) in nodes.iter().enumerate() {
        let node = node.clone();
        let command = command.clone();
        set.spawn(async move { (i, node.exec(command).await) });
    }
    let mut out: Vec<Result<RedisReply, LockError>> = (0..nodes.len())
        .map(|_| Err(LockError::InvalidConfig("task lost".into())))
        .collect();
    while let Some(joined) = set.join_next().await {
        if let Ok((i, r)) = joined {
            out[i] = r;
        }
    }
    out
}

fn compare_and_delete(key: &str, owner: &str) -> RedisCommand {
    RedisCommand::EvalCompareAndDelete {
        key: key.to_string(),
        value: owner.to_string(),
    }
}

struct RedlockHeld {
    nodes: Arc<[RedisNode]>,
    key: String,
    owner: String,
    quorum: usize,
    grants: Grants,
}

impl HeldLock for RedlockHeld {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let Some(command) = self.grants.release(&self.key, &self.owner) else {
                return Ok(());
            };
            let replies = broadcast(&self.nodes, command).await;
            let freed = replies
                .iter()
                .filter(|r| {
                    r.as_ref()
                        .is_ok_and(|r| self.grants.released(&self.key, &self.owner, r))
                })
                .count();
            if freed >= self.quorum {
                Ok(())
            } else {
                Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                })
            }
        })
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            if let Grants::Steps(..) = self.grants {
                return Err(LockError::Unsupported {
                    protocol: "a Redlock protocol file",
                    what: "renewal",
                });
            }
            let command = RedisCommand::EvalCompareAndRenew {
                key: self.key.clone(),
                value: self.owner.clone(),
                px: px(lease),
            };
            let replies = broadcast(&self.nodes, command).await;
            let renewed = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Integer(1))))
                .count();
            let refused = replies
                .iter()
                .filter(|r| matches!(r, Ok(RedisReply::Integer(0))))
                .count();
            if renewed >= self.quorum {
                Ok(())
            } else if refused > self.nodes.len() - self.quorum {
                Err(LockError::NotHeld {
                    key: self.key.clone(),
                    reason: None,
                })
            } else {
                Err(LockError::NoQuorum {
                    granted: renewed,
                    nodes: self.nodes.len(),
                    needed: self.quorum,
                    validity_ms: 0,
                })
            }
        })
    }
}

impl DistributedLock for Redlock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: self.name(),
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: false,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let ttl = require_ttl(self.name(), lease)?;
            let start = Instant::now();
            let grants = self.grants(ttl);
            let Some(command) = grants.acquire(&self.key, &self.owner, ttl) else {
                return Ok(Attempt::busy());
            };
            let replies = self.broadcast(command).await;
            // A refusal is any reply that does not grant; an error is no answer.
            let (mut granted, mut busy) = (0, 0);
            for reply in replies.iter().flatten() {
                if grants.granted(&self.key, &self.owner, reply) {
                    granted += 1;
                } else if !matches!(reply, RedisReply::Error(_)) {
                    busy += 1;
                }
            }
            let elapsed = start.elapsed();
            let validity =
                ttl.as_millis() as i64 - elapsed.as_millis() as i64 - drift(ttl).as_millis() as i64;
            if granted >= self.quorum() && validity > 0 {
                let held = Arc::new(RedlockHeld {
                    nodes: self.nodes.clone(),
                    key: self.key.clone(),
                    owner: self.owner.clone(),
                    quorum: self.quorum(),
                    grants,
                });
                return Ok(Attempt::Acquired(LockGuard::new(
                    self.name(),
                    &self.key,
                    None,
                    held,
                    lease,
                    start,
                )));
            }
            // Undo everywhere, including nodes that did not answer: they may have set it.
            if let Some(undo) = grants.release(&self.key, &self.owner) {
                let _ = self.broadcast(undo).await;
            }
            if busy >= self.quorum() {
                return Ok(Attempt::busy());
            }
            Err(LockError::NoQuorum {
                granted,
                nodes: self.nodes.len(),
                needed: self.quorum(),
                validity_ms: validity,
            })
        })
    }
}
