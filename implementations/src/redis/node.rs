//! One Redis server as the lock clients see it: a reconnecting multiplexed connection,
//! bounded waits, an optional recorder, and local release wake-ups.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use locklab_models::redis::spec::{RedisCommand, RedisReply};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, ErrorKind, RedisError, Value};
use tokio::sync::Notify;

use super::local_queue::LocalQueue;
use super::recorder::Recorder;
use super::wire::{self, Wire};
use crate::error::LockError;

/// `PX` (milliseconds) from a lease, at least 1 ms (Redis refuses 0).
pub fn px(lease: Duration) -> u64 {
    u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// How to talk to one node.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// How long one command may take before it counts as unanswered. Bounds how long
    /// `acquire` can overrun its wait when the server stops answering.
    pub response_timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// Where to record every exchange (`None`: no recording, no cost).
    pub recorder: Option<Recorder>,
    /// This node's index in the recording (Redlock numbers its nodes).
    pub index: usize,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            response_timeout: Duration::from_millis(500),
            connect_timeout: Duration::from_millis(500),
            recorder: None,
            index: 0,
        }
    }
}

/// A connected Redis node. Cheap to clone; clones share the connection, the recorder and
/// the wake-ups.
#[derive(Clone)]
pub struct RedisNode {
    inner: Arc<Inner>,
}

struct Inner {
    addr: String,
    conn: ConnectionManager,
    options: NodeOptions,
    wakeups: Mutex<HashMap<String, Weak<Notify>>>,
    queues: Mutex<HashMap<String, Weak<LocalQueue>>>,
}

impl std::fmt::Debug for RedisNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNode")
            .field("addr", &self.inner.addr)
            .finish()
    }
}

impl RedisNode {
    /// Connects to `addr` (`host:port`). Fails within about twice the connect timeout
    /// when nothing answers.
    pub async fn connect(addr: &str, options: NodeOptions) -> Result<Self, LockError> {
        let client = redis::Client::open(format!("redis://{addr}/")).map_err(LockError::backend)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(options.response_timeout)
            .set_connection_timeout(options.connect_timeout)
            .set_number_of_retries(1)
            .set_max_delay(100);
        let bound = options.connect_timeout * 2;
        let conn =
            match tokio::time::timeout(bound, ConnectionManager::new_with_config(client, config))
                .await
            {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => return Err(LockError::backend(e)),
                Err(_) => {
                    return Err(LockError::NoAnswer {
                        node: addr.to_string(),
                        timeout: bound,
                    })
                }
            };
        Ok(RedisNode {
            inner: Arc::new(Inner {
                addr: addr.to_string(),
                conn,
                options,
                wakeups: Mutex::new(HashMap::new()),
                queues: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The address connected to.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// The options in force.
    pub fn options(&self) -> &NodeOptions {
        &self.inner.options
    }

    /// The wake-up shared by every handle of this node on `key`: each local release
    /// wakes *one* local waiter, which retries at once instead of at its next backoff.
    /// One, not all: waking every waiter makes each release cost a burst of doomed
    /// `SET NX`es (16 tasks on one key ran at a third of the speed that way).
    pub fn wakeup(&self, key: &str) -> Arc<Notify> {
        per_key(&self.inner.wakeups, key)
    }

    /// The hand-off queue shared by every `redis-lua` handle of this node on `key`
    /// (see [`super::handoff`]).
    pub fn local_queue(&self, key: &str) -> Arc<LocalQueue> {
        per_key(&self.inner.queues, key)
    }

    /// Sends one command and waits (at most the response timeout) for its reply. Error
    /// replies come back as `Err` and are recorded as [`RedisReply::Error`].
    ///
    /// A command that got no reply has an *unknown* outcome, and not only "maybe it ran
    /// before the connection died": while the connection is being re-established redis-rs
    /// may still deliver it, so it can take effect after the server comes back (seen in
    /// the Redlock restart test). Protocols must treat it like Jepsen's `info`: a
    /// possible grant that only its lease bounds.
    pub async fn exec(&self, command: RedisCommand) -> Result<RedisReply, LockError> {
        self.exec_via(command, Scripts::ByHash).await
    }

    async fn exec_via(
        &self,
        command: RedisCommand,
        scripts: Scripts,
    ) -> Result<RedisReply, LockError> {
        let ticket = self.inner.options.recorder.as_ref().map(Recorder::begin);
        let result = self.send(&command, scripts).await;
        if let (Some(rec), Some(t)) = (&self.inner.options.recorder, ticket) {
            let reply = match &result {
                Ok(r) => Some(r.clone()),
                Err(Sent::Server(msg)) => Some(RedisReply::Error(msg.clone())),
                Err(Sent::Unknown(_)) => None,
            };
            rec.finish(t, self.inner.options.index, None, command, reply);
        }
        result.map_err(|e| match e {
            Sent::Server(msg) => LockError::Backend(msg.into()),
            Sent::Unknown(e) => e,
        })
    }

    /// [`RedisNode::exec`], calling `after_sent` as soon as the command is queued on the
    /// connection (after its first poll) rather than when the reply is in. A release
    /// uses it to wake a local waiter whose `SET NX` then travels right behind the
    /// release on the same connection — in order, so it finds the key gone — and the
    /// hand-over costs one round trip instead of two.
    pub async fn exec_then(
        &self,
        command: RedisCommand,
        after_sent: impl FnOnce(),
    ) -> Result<RedisReply, LockError> {
        self.exec_via_then(command, Scripts::ByHash, after_sent)
            .await
    }

    /// [`RedisNode::exec_then`] for a command that must reach the server before any
    /// command sent after `after_sent` ran: a script goes as `EVAL` with its source, so
    /// that no `NOSCRIPT` retry can put it behind them. Commands on one connection are
    /// executed in the order their first poll queued them; only a reconnection in
    /// between can reorder them, and then both outcomes are unknown anyway.
    pub(crate) async fn exec_in_order_then(
        &self,
        command: RedisCommand,
        after_sent: impl FnOnce(),
    ) -> Result<RedisReply, LockError> {
        self.exec_via_then(command, Scripts::BySource, after_sent)
            .await
    }

    async fn exec_via_then(
        &self,
        command: RedisCommand,
        scripts: Scripts,
        after_sent: impl FnOnce(),
    ) -> Result<RedisReply, LockError> {
        let fut = self.exec_via(command, scripts);
        tokio::pin!(fut);
        let mut after_sent = Some(after_sent);
        std::future::poll_fn(|cx| {
            let polled = fut.as_mut().poll(cx);
            if let Some(f) = after_sent.take() {
                f();
            }
            polled
        })
        .await
    }

    async fn send(&self, command: &RedisCommand, scripts: Scripts) -> Result<RedisReply, Sent> {
        let call = match wire::encode(command) {
            Wire::Plain(cmd) => return self.raw(&cmd).await,
            Wire::Script(call) => call,
        };
        if scripts == Scripts::BySource {
            return self.raw(&call.eval()).await;
        }
        match self.raw(&call.evalsha()).await {
            Err(Sent::Server(msg)) if msg.starts_with("NOSCRIPT") => self.raw(&call.eval()).await,
            other => other,
        }
    }

    async fn raw(&self, cmd: &Cmd) -> Result<RedisReply, Sent> {
        let mut conn = self.inner.conn.clone();
        let timeout = self.inner.options.response_timeout;
        match tokio::time::timeout(timeout, conn.send_packed_command(cmd)).await {
            Ok(Ok(Value::ServerError(e))) => Err(Sent::Server(
                format!("{} {}", e.code(), e.details().unwrap_or(""))
                    .trim()
                    .to_string(),
            )),
            Ok(Ok(v)) => Ok(wire::decode(v)),
            Ok(Err(e)) => Err(classify(e)),
            Err(_) => Err(Sent::Unknown(LockError::NoAnswer {
                node: self.inner.addr.clone(),
                timeout,
            })),
        }
    }
}

/// The `T` of `key` in `map`, created on first use and forgotten when no handle holds it.
fn per_key<T: Default>(map: &Mutex<HashMap<String, Weak<T>>>, key: &str) -> Arc<T> {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = map.get(key).and_then(Weak::upgrade) {
        return n;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let n = Arc::new(T::default());
    map.insert(key.to_string(), Arc::downgrade(&n));
    n
}

/// How scripts are sent: `EVALSHA` first (falling back to `EVAL` on `NOSCRIPT`, which
/// sends the command a second time, later), or `EVAL` right away.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scripts {
    ByHash,
    BySource,
}

enum Sent {
    /// The server answered with an error reply.
    Server(String),
    /// No usable answer: the command may or may not have run.
    Unknown(LockError),
}

fn classify(e: RedisError) -> Sent {
    let server_side = matches!(
        e.kind(),
        ErrorKind::ResponseError
            | ErrorKind::NoScriptError
            | ErrorKind::ExecAbortError
            | ErrorKind::BusyLoadingError
            | ErrorKind::ReadOnly
            | ErrorKind::TypeError
            | ErrorKind::ExtensionError
    );
    if server_side {
        let code = e.code().unwrap_or("ERR");
        let detail = e.detail().unwrap_or("");
        Sent::Server(format!("{code} {detail}").trim().to_string())
    } else {
        Sent::Unknown(LockError::backend(e))
    }
}

/// The error for a reply the protocol does not allow.
pub(crate) fn unexpected(command: &RedisCommand, reply: &RedisReply) -> LockError {
    LockError::UnexpectedReply {
        command: command.to_string(),
        reply: reply.to_string(),
    }
}
