//! A user's etcd protocol ([`EtcdProtocol`]) as a real client: its session lease (kept
//! alive by [`SessionLease`]), its acquire requests one by one with placeholders
//! filled, the replies read by the protocol's own patterns — the same requests and
//! meanings its model runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_models::etcd::spec::{EtcdCommand, EtcdReply};
use locklab_models::protocol::etcd::{put_revision, EtcdFill, NO_LEASE};
use locklab_models::protocol::{EtcdProtocol, OnBusy, Outcome};

use super::lease::SessionLease;
use super::session::EtcdSession;
use super::single_key::{RELEASE_TRIES, RETRY_AFTER};
use crate::attempt::Attempt;
use crate::box_future::BoxFuture;
use crate::error::LockError;
use crate::guard::{HeldLock, LockGuard};
use crate::lease::Lease;
use crate::lock::{interned, DistributedLock, LockInfo};

/// One owner of a described etcd lock.
#[derive(Debug)]
pub struct DescribedEtcdLock {
    session: EtcdSession,
    protocol: Arc<EtcdProtocol>,
    key: String,
    owner: String,
    name: &'static str,
    lease: SessionLease,
}

/// What a client fills its requests with: the acquire's lease and put revision.
#[derive(Clone, Debug)]
struct Filling {
    key: String,
    owner: String,
    lease: i64,
    rev: u64,
}

impl Filling {
    fn fill(&self) -> EtcdFill<'_> {
        EtcdFill {
            key: &self.key,
            token: &self.owner,
            lease: self.lease,
            rev: self.rev,
        }
    }
}

struct Held {
    session: EtcdSession,
    protocol: Arc<EtcdProtocol>,
    filling: Filling,
}

/// Sends a release step, and sends it again after [`RETRY_AFTER`] when its reply is
/// lost, as the model's client does (the step may have taken effect the first time).
/// Its reply, and whether it was sent more than once.
async fn send_release(
    session: &EtcdSession,
    cmd: EtcdCommand,
) -> Result<(EtcdReply, bool), LockError> {
    let mut tried = 0;
    loop {
        match session.exec(cmd.clone()).await {
            Ok(reply) => return Ok((reply, tried > 0)),
            Err(e) if tried + 1 >= RELEASE_TRIES => return Err(e),
            Err(_) => tried += 1,
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// Runs the release steps; `Err(NotHeld)` where a step says the client did not hold it.
async fn release(
    session: &EtcdSession,
    protocol: &EtcdProtocol,
    filling: &Filling,
) -> Result<(), LockError> {
    let mut stage = 0u8;
    while let Some(cmd) = protocol.release_request(stage, &filling.fill()) {
        let (reply, resent) = send_release(session, cmd).await?;
        match protocol.released(stage, &reply) {
            Outcome::Next => stage += 1,
            // The lost first one may be what did the work: "not held" is no claim.
            Outcome::NotHeld if resent => {
                return Err(LockError::backend(std::io::Error::other(format!(
                    "the release's reply was lost, and sent again it answered {}: the lost one may have released",
                    locklab_models::etcd::spec::reply_text(&reply)
                ))))
            }
            Outcome::NotHeld => {
                return Err(LockError::NotHeld {
                    key: filling.key.clone(),
                    reason: None,
                })
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}

impl HeldLock for Held {
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(release(&self.session, &self.protocol, &self.filling))
    }
}

impl DescribedEtcdLock {
    /// A handle for `owner` on `key` (`{key}`), following `protocol`.
    pub fn new(session: EtcdSession, key: &str, owner: &str, protocol: Arc<EtcdProtocol>) -> Self {
        let name = interned(&protocol.name);
        DescribedEtcdLock {
            session,
            protocol,
            key: key.into(),
            owner: owner.into(),
            name,
            lease: SessionLease::default(),
        }
    }

    async fn attempt(&self, lease: Lease) -> Result<Attempt, LockError> {
        let sent_at = Instant::now();
        let id = if self.protocol.lease {
            let ttl = match lease {
                Lease::Fixed(d) | Lease::Watchdog(d) => d,
                Lease::Unbounded => {
                    return Err(LockError::Unsupported {
                        protocol: self.name,
                        what: "an unbounded lease (it takes a session lease)",
                    })
                }
            };
            self.lease.id(&self.session, ttl.max(Duration::from_secs(1))).await?
        } else {
            NO_LEASE
        };
        let mut filling = Filling {
            key: self.key.clone(),
            owner: self.owner.clone(),
            lease: id,
            rev: 0,
        };
        let mut stage = 0u8;
        while let Some(cmd) = self.protocol.acquire_request(stage, &filling.fill()) {
            let reply = self.session.exec(cmd).await?;
            if let Some(rev) = put_revision(&reply) {
                filling.rev = rev;
            }
            match self.protocol.acquired(stage, &reply) {
                Outcome::Next => stage += 1,
                Outcome::Granted => {
                    let token = self.protocol.fencing.then_some(filling.rev);
                    let held = Arc::new(Held {
                        session: self.session.clone(),
                        protocol: Arc::clone(&self.protocol),
                        filling,
                    });
                    return Ok(Attempt::Acquired(LockGuard::new(
                        self.name, &self.key, token, held, lease, sent_at,
                    )));
                }
                _ => return self.refused(&reply, &filling).await,
            }
        }
        Ok(Attempt::busy())
    }

    /// A refusal: a lease etcd no longer knows is forgotten (the next try takes a new
    /// one, as the model's client does); `on_busy = "release"` runs the release first.
    async fn refused(&self, reply: &EtcdReply, filling: &Filling) -> Result<Attempt, LockError> {
        let lease_gone = matches!(reply, EtcdReply::LeaseNotFound)
            || matches!(reply, EtcdReply::Txn { responses, .. } if responses.contains(&EtcdReply::LeaseNotFound));
        if lease_gone {
            self.lease.forget();
        }
        if self.protocol.on_busy == OnBusy::Release {
            let _ = release(&self.session, &self.protocol, filling).await;
        }
        Ok(Attempt::busy())
    }
}

impl DistributedLock for DescribedEtcdLock {
    fn info(&self) -> LockInfo {
        LockInfo {
            protocol: self.name,
            key: self.key.clone(),
            owner: self.owner.clone(),
            reentrant: false,
            fenced: self.protocol.fencing,
            teaching_only: false,
        }
    }

    fn try_acquire(&self, lease: Lease) -> BoxFuture<'_, Result<Attempt, LockError>> {
        Box::pin(self.attempt(lease))
    }
}
