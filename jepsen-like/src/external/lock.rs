//! An external client as a [`DistributedLock`]: every attempt, release and renewal is one
//! request to the client's process, so the harness's workload, recorder, checks and
//! model agreement run unchanged over a lock written in any language.

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use locklab_implementations::{
    Attempt, BoxFuture, DistributedLock, HeldLock, Lease, LockError, LockGuard, LockInfo,
};

use super::process::{ClientProcess, Failure, Waiter};
use super::protocol::{Outcome, Reply, Request};
use super::ExternalClient;
use crate::custom::ClientContext;

/// The `protocol` of an external client's lock and guards.
const PROTOCOL: &str = "external";

/// One client's lock: its process, started and initialised.
pub struct ExternalLock {
    process: Arc<ClientProcess>,
    key: String,
    reply_timeout: Duration,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What an `error` reply (or a refusal where none is allowed) says, as a lock error.
fn said(reply: &Reply, what: &str) -> LockError {
    let words = reply.message.as_deref().unwrap_or("no message");
    LockError::backend(std::io::Error::other(format!(
        "the client's {what}: {words}"
    )))
}

impl ExternalLock {
    /// Starts `spec`'s program as the client `client` describes and sends it `init`;
    /// it must answer `ok` within the spec's init timeout.
    pub fn start(spec: &ExternalClient, client: &ClientContext<'_>) -> Result<Self, LockError> {
        let name = format!("c{}", client.index);
        // Not a bad config: the program is there (checked before any server started);
        // it died, refused or hung at init, which the harness reports as a run that
        // could not start.
        let failed = |what: String| {
            LockError::backend(std::io::Error::other(format!(
                "client {name} ({}) {what}",
                spec.command.join(" ")
            )))
        };
        let process = ClientProcess::spawn(spec, &name, Arc::clone(client.log), client.dir)
            .map_err(&failed)?;
        let init = Request::Init {
            id: process.next_id(),
            version: super::protocol::VERSION,
            client: &name,
            index: client.index,
            backend: client.external.backend,
            endpoints: client.external,
            lock: client.key,
            lease_ms: ms(client.lease),
        };
        let (tx, rx) = mpsc::channel();
        let stderr = |p: &ClientProcess| match p.stderr_tail() {
            t if t.is_empty() => String::new(),
            t => format!("; its stderr:\n{t}"),
        };
        if let Err(f) = process.send(&init, Waiter::Blocking(tx)) {
            return Err(failed(format!(
                "could not be sent init: {f:?}{}",
                stderr(&process)
            )));
        }
        let answer = rx.recv_timeout(spec.init_timeout);
        match answer {
            Ok(Ok(Reply {
                outcome: Outcome::Ok,
                ..
            })) => Ok(ExternalLock {
                process: Arc::new(process),
                key: client.key.to_string(),
                reply_timeout: spec.reply_timeout,
            }),
            Ok(Ok(reply)) => Err(failed(format!(
                "refused init: {}{}",
                reply.message.as_deref().unwrap_or("no message"),
                stderr(&process)
            ))),
            Ok(Err(Failure::Gone(why))) => {
                Err(failed(format!("ended before answering init: {why}")))
            }
            Ok(Err(Failure::Malformed(why))) => Err(failed(format!(
                "answered init with a line locklab cannot read: {why}{}",
                stderr(&process)
            ))),
            Err(_) => Err(failed(format!(
                "did not answer init within {:?}{}",
                spec.init_timeout,
                stderr(&process)
            ))),
        }
    }
}

impl DistributedLock for ExternalLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: PROTOCOL,
            key: self.key.clone(),
            owner: self.process.name().to_string(),
            reentrant: false,
            fenced: false,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(async move {
            let sent_at = Instant::now();
            let request = Request::Acquire {
                id: self.process.next_id(),
                lock: &self.key,
                // One try: the harness waits itself, so each try is its own operation.
                wait_ms: 0,
                lease_ms: lease.ttl().map(ms),
            };
            let reply = self.process.request(&request, self.reply_timeout).await?;
            match reply.outcome {
                Outcome::Ok => {
                    let held = Arc::new(ExternalHold {
                        process: Arc::clone(&self.process),
                        key: self.key.clone(),
                        reply_timeout: self.reply_timeout,
                    });
                    let guard = LockGuard::new(
                        PROTOCOL,
                        self.key.clone(),
                        reply.token,
                        held,
                        lease,
                        sent_at,
                    );
                    Ok(Attempt::Acquired(match reply.lease_ms {
                        // The lease the library really took, where it is not the one
                        // asked for: the checks hold the grant to it.
                        Some(ms) => {
                            guard.with_granted_lease(Lease::Fixed(Duration::from_millis(ms)))
                        }
                        None => guard,
                    }))
                }
                Outcome::Refused => Ok(Attempt::Busy {
                    retry_after: None,
                    reason: reply.message.clone(),
                }),
                Outcome::Error => Err(said(&reply, "acquire failed")),
            }
        })
    }

    fn stall(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.process.stop();
            tokio::time::sleep(d).await;
            self.process.resume();
        })
    }
}

/// A grant the client holds: release and renew are requests to the same process.
struct ExternalHold {
    process: Arc<ClientProcess>,
    key: String,
    reply_timeout: Duration,
}

impl ExternalHold {
    async fn call(&self, request: Request<'_>) -> Result<(), LockError> {
        let kind = request.kind();
        let reply = self.process.request(&request, self.reply_timeout).await?;
        match reply.outcome {
            Outcome::Ok => Ok(()),
            Outcome::Refused => Err(LockError::NotHeld {
                key: self.key.clone(),
                reason: reply.message.clone(),
            }),
            Outcome::Error => Err(said(&reply, &format!("{kind} failed"))),
        }
    }
}

impl HeldLock for ExternalHold {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.call(Request::Release {
            id: self.process.next_id(),
            lock: &self.key,
        }))
    }

    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(self.call(Request::Renew {
            id: self.process.next_id(),
            lock: &self.key,
            lease_ms: ms(lease),
        }))
    }
}
