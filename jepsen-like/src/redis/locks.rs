//! Which client lock a Redis scenario uses, with the fault knobs the broken locks
//! carry, and how one client builds it from its connected nodes.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::redis::history::event_recorder;
use locklab_implementations::redis::{
    DelUnconditionalLock, FencedLock, GetSetLock, GetThenDelLock, LuaLock, NodeOptions, RedisNode,
    Redlock, ReentrantLock, SetNxExpireLock, SetNxNoTtlLock, TimestampValueLock, WaitReplicas,
};
use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Fault;

use super::client::RedisClient;
use crate::family::CommandLog;
use crate::proxy::ClientProxies;
use crate::RunError;

/// A Redis lock of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisLock {
    /// `redis-get-set`, with this gap between its `GET` and its `SET` (ms), which
    /// widens the race a real network opens.
    GetSet {
        /// The gap.
        gap_ms: u64,
    },
    /// `redis-setnx-no-ttl`.
    SetNxNoTtl,
    /// `redis-setnx-expire`; client `crashing` (if any) dies right after its
    /// `at_win`-th `SETNX` that won, before its `EXPIRE`.
    SetNxExpire {
        /// Who carries the crash knob.
        crashing: Option<u32>,
        /// Which of its winning `SETNX`es it dies after (from 1).
        at_win: u32,
    },
    /// `redis-del-unconditional`.
    DelUnconditional,
    /// `redis-get-then-del`, pausing this long between the `GET` and the `DEL` of
    /// every release (ms). The foreign `DEL` it makes happens inside its own release
    /// operation, which began before the other client's grant, so only the command
    /// events prove it.
    GetThenDel {
        /// The pause.
        pause_before_del_ms: u64,
    },
    /// `redis-timestamp-value` with a frozen clock: every grant carries the same
    /// timestamp, as two acquires in one millisecond do.
    TimestampValueOneTick,
    /// `redis-lua`.
    Lua,
    /// `redis-lua-reentry`: the Lua lock, each section calling `lock()` on it again.
    LuaNested,
    /// `redis-lua` with `WAIT replicas` before entering.
    LuaWait(u32),
    /// `redis-lua-fenced`.
    Fenced,
    /// `redis-reentrant`.
    Reentrant,
    /// `redis-reentrant` taken as Redisson's `lock()` with no lease time: granted for
    /// the lease, then renewed by the watchdog every third of it until released.
    ReentrantWatchdog,
    /// `redis-reentrant-thread-id`: every client is "thread 1" with no process UUID.
    ReentrantThreadId,
    /// Redlock over every node.
    Redlock,
}

impl RedisLock {
    /// The model's faults its knobs carry: a crash between `SETNX` and `EXPIRE`, a
    /// pause between the `GET` and the `DEL` of a release.
    pub fn realises(self) -> Vec<Fault> {
        match self {
            RedisLock::SetNxExpire {
                crashing: Some(_), ..
            } => vec![Fault::Crash],
            RedisLock::GetThenDel {
                pause_before_del_ms,
            } if pause_before_del_ms > 0 => vec![Fault::Pause],
            _ => Vec::new(),
        }
    }

    /// The lease it asks for: none for the lock without a TTL (it refuses one).
    pub fn lease(self, ttl: Duration) -> Lease {
        match self {
            RedisLock::SetNxNoTtl => Lease::Unbounded,
            RedisLock::ReentrantWatchdog => Lease::Watchdog(ttl),
            _ => Lease::Fixed(ttl),
        }
    }
}

fn node_options() -> NodeOptions {
    NodeOptions {
        response_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(300),
        ..NodeOptions::default()
    }
}

/// Connects one client to every address; node `i` of its commands is `addrs[i]`.
/// With `own_proxies`, through proxies of its own in front of them.
pub async fn connect(
    addrs: &[String],
    commands: CommandLog,
    own_proxies: bool,
) -> Result<RedisClient, RunError> {
    let proxies =
        match own_proxies {
            true => Some(ClientProxies::start(addrs).await.map_err(|e| {
                RunError::Environment(format!("a client's proxies to {addrs:?}: {e}"))
            })?),
            false => None,
        };
    let through = proxies.as_ref().map(ClientProxies::addrs);
    let addrs = through.as_deref().unwrap_or(addrs);
    let CommandLog { process, log } = commands;
    let base = log.base();
    let recorder = event_recorder(process, base, move |e| log.record_stamped(e));
    let mut nodes = Vec::new();
    for (index, addr) in addrs.iter().enumerate() {
        let options = NodeOptions {
            recorder: Some(recorder.clone()),
            index,
            ..node_options()
        };
        nodes.push(
            RedisNode::connect(addr, options)
                .await
                .map_err(|e| RunError::Environment(format!("connecting to {addr}: {e}")))?,
        );
    }
    Ok(RedisClient { nodes, proxies })
}

/// Client `index`'s `lock` on `key`.
pub fn build(
    lock: RedisLock,
    index: u32,
    client: &RedisClient,
    key: &str,
) -> Result<Box<dyn DistributedLock>, RunError> {
    let nodes = &client.nodes;
    let first = nodes
        .first()
        .ok_or_else(|| RunError::Internal("no lock endpoint".into()))?;
    Ok(match lock {
        RedisLock::GetSet { gap_ms } => {
            Box::new(GetSetLock::new(first, key).with_gap(Duration::from_millis(gap_ms)))
        }
        RedisLock::SetNxNoTtl => Box::new(SetNxNoTtlLock::new(first, key)),
        RedisLock::SetNxExpire { crashing, at_win } => {
            Box::new(
                SetNxExpireLock::new(first, key)
                    .crash_after_setnx_win(if crashing == Some(index) { at_win } else { 0 }),
            )
        }
        RedisLock::DelUnconditional => Box::new(DelUnconditionalLock::new(first, key)),
        RedisLock::GetThenDel {
            pause_before_del_ms,
        } => Box::new(
            GetThenDelLock::new(first, key)
                .with_pause_before_del(Duration::from_millis(pause_before_del_ms)),
        ),
        RedisLock::TimestampValueOneTick => {
            Box::new(TimestampValueLock::new(first, key).with_clock(Arc::new(|| 1_000)))
        }
        RedisLock::Lua | RedisLock::LuaNested => Box::new(LuaLock::new(first, key)),
        RedisLock::LuaWait(replicas) => Box::new(LuaLock::new(first, key).wait_for_replicas(
            // Well inside the response timeout, or WAIT's own answer would come too late.
            WaitReplicas {
                replicas,
                timeout: Duration::from_millis(100),
            },
        )),
        RedisLock::Fenced => Box::new(FencedLock::new(first, key)),
        RedisLock::Reentrant | RedisLock::ReentrantWatchdog => {
            Box::new(ReentrantLock::new(first, key))
        }
        RedisLock::ReentrantThreadId => {
            Box::new(ReentrantLock::with_thread_id_owner(first, key, 1))
        }
        RedisLock::Redlock => {
            Box::new(Redlock::new(nodes, key).map_err(|e| RunError::Internal(e.to_string()))?)
        }
    })
}
