//! An etcd connection speaking the spec's requests: each [`EtcdCommand`] is sent as the
//! gRPC call it names and its answer read back as an [`EtcdReply`], so what a lock does
//! on a real cluster can be held against the same semantics the models use. Every
//! request is recorded in the [`RequestLog`] with the window between its call and its
//! answer.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare as EtcdCompare, CompareOp, EventType, GetOptions, KeyValue, LockOptions,
    PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse, WatchFilterType, WatchOptions,
};
use locklab_models::etcd::spec::{
    command_text, reply_text, Compare, EtcdCommand, EtcdReply, Kv, LeaseId,
};

use crate::error::LockError;
use crate::recorder::Wire;

/// etcd's vocabulary for the shared [`Recorder`](crate::recorder::Recorder): the spec's
/// requests and replies.
#[derive(Clone, Debug, PartialEq)]
pub struct EtcdWire;

impl Wire for EtcdWire {
    type Command = EtcdCommand;
    type Reply = EtcdReply;

    fn key(command: &EtcdCommand) -> Option<String> {
        request_key(command).map(str::to_string)
    }

    fn command_text(command: &EtcdCommand) -> String {
        command_text(command)
    }

    fn reply_text(reply: &EtcdReply) -> String {
        reply_text(reply)
    }
}

/// One request and what came back.
pub type Request = crate::recorder::Exchange<EtcdWire>;

/// A shared, append-only request log; clone it into every session of a run.
pub type RequestLog = crate::recorder::Recorder<EtcdWire>;

/// The key a request is about: its key, its prefix, or a `Txn`'s first compared key
/// (the lock key, for every `Txn` the locks send).
pub fn request_key(cmd: &EtcdCommand) -> Option<&str> {
    match cmd {
        EtcdCommand::Get { key }
        | EtcdCommand::Put { key, .. }
        | EtcdCommand::Delete { key }
        | EtcdCommand::Unlock { key } => Some(key),
        EtcdCommand::Lock { name, .. } => Some(name),
        EtcdCommand::FirstCreate { prefix } | EtcdCommand::LastCreateBefore { prefix, .. } => {
            Some(prefix)
        }
        EtcdCommand::Txn { compare, .. } => compare.first().map(|c| match c {
            Compare::CreateRevision { key, .. } => key.as_str(),
        }),
        EtcdCommand::Grant { .. } | EtcdCommand::KeepAlive { .. } | EtcdCommand::Revoke { .. } => {
            None
        }
    }
}

/// How long a request may take before the client gives up on it (outcome unknown).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// How soon a failed keep-alive is tried again.
const KEEP_ALIVE_RETRY: Duration = Duration::from_millis(100);

/// A client connection to the cluster, logging every request.
#[derive(Clone)]
pub struct EtcdSession {
    client: Client,
    endpoints: Arc<Vec<String>>,
    log: RequestLog,
    /// Until when this client is stopped (shared by every clone: the keep-alive task's
    /// too).
    stalled_until: Arc<Mutex<Option<Instant>>>,
}

impl std::fmt::Debug for EtcdSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdSession").finish_non_exhaustive()
    }
}

fn backend(e: etcd_client::Error) -> LockError {
    LockError::Backend(Box::new(e))
}

fn kv(k: &KeyValue) -> (String, Kv) {
    let lease = k.lease();
    (
        String::from_utf8_lossy(k.key()).into_owned(),
        Kv {
            value: String::from_utf8_lossy(k.value()).into_owned(),
            create_rev: u64::try_from(k.create_revision()).unwrap_or(0),
            mod_rev: u64::try_from(k.mod_revision()).unwrap_or(0),
            lease: (lease != 0).then_some(lease),
        },
    )
}

/// etcd's `requested lease not found`, or etcd-client's `lease not found` for a
/// keep-alive answered with TTL 0.
fn not_found(e: &etcd_client::Error) -> bool {
    e.to_string().contains("lease not found")
}

/// The range options of a range request, or `None` when it is not one.
fn range(cmd: &EtcdCommand) -> Option<(String, Option<GetOptions>)> {
    Some(match cmd {
        EtcdCommand::Get { key } => (key.clone(), None),
        EtcdCommand::FirstCreate { prefix } => (
            prefix.clone(),
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Create, SortOrder::Ascend)
                    .with_limit(1),
            ),
        ),
        EtcdCommand::LastCreateBefore {
            prefix,
            max_create_rev,
        } => (
            prefix.clone(),
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_max_create_revision(i64::try_from(*max_create_rev).unwrap_or(i64::MAX))
                    .with_sort(SortTarget::Create, SortOrder::Descend)
                    .with_limit(1),
            ),
        ),
        _ => return None,
    })
}

fn txn_op(cmd: &EtcdCommand) -> Option<TxnOp> {
    if let Some((key, opts)) = range(cmd) {
        return Some(TxnOp::get(key, opts));
    }
    match cmd {
        EtcdCommand::Put { key, value, lease } => Some(TxnOp::put(
            key.clone(),
            value.clone(),
            lease.map(|l| PutOptions::new().with_lease(l)),
        )),
        EtcdCommand::Delete { key } => Some(TxnOp::delete(key.clone(), None)),
        _ => None,
    }
}

impl EtcdSession {
    /// Connects to `endpoints` (`http://127.0.0.1:PORT`, …), recording into `log`; a
    /// request that takes longer than 2 s fails.
    pub async fn connect(endpoints: &[String], log: RequestLog) -> Result<Self, LockError> {
        Self::connect_with(endpoints, log, Some(REQUEST_TIMEOUT), Arc::default()).await
    }

    async fn connect_with(
        endpoints: &[String],
        log: RequestLog,
        timeout: Option<Duration>,
        stalled_until: Arc<Mutex<Option<Instant>>>,
    ) -> Result<Self, LockError> {
        // A member cut off from its quorum holds every request until it times out, and a
        // keep-alive stuck there lets the lease run out on the majority while the client
        // could have reached it. Go's clientv3 sends its keep-alives requiring a leader,
        // so a leaderless member refuses them at once and the next try goes elsewhere;
        // every request here does the same.
        let mut opts = etcd_client::ConnectOptions::new()
            .with_connect_timeout(REQUEST_TIMEOUT)
            .with_require_leader(true);
        if let Some(t) = timeout {
            opts = opts.with_timeout(t);
        }
        let client = Client::connect(endpoints, Some(opts))
            .await
            .map_err(backend)?;
        Ok(EtcdSession {
            client,
            endpoints: Arc::new(endpoints.to_vec()),
            log,
            stalled_until,
        })
    }

    /// A second connection to the same members, recording into the same log and
    /// stopped with this one, whose requests have no time limit: etcd's `Lock` RPC
    /// answers only once the lock is granted, however long the queue ahead takes.
    pub async fn without_timeout(&self) -> Result<Self, LockError> {
        Self::connect_with(
            &self.endpoints,
            self.log.clone(),
            None,
            self.stalled_until.clone(),
        )
        .await
    }

    /// The request log.
    pub fn log(&self) -> &RequestLog {
        &self.log
    }

    /// Stops this client for `d`, as SIGSTOP would: no request of any clone of the
    /// session (the lease keep-alives included) leaves before it is over. Clients that
    /// run as tasks of one process pause this way.
    pub fn stall(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut s = self.stalled_until.lock().unwrap_or_else(|p| p.into_inner());
        *s = Some(s.map_or(until, |u| u.max(until)));
    }

    async fn wait_while_stalled(&self) {
        loop {
            let until = *self.stalled_until.lock().unwrap_or_else(|p| p.into_inner());
            match until {
                Some(u) if u > Instant::now() => tokio::time::sleep_until(u.into()).await,
                _ => return,
            }
        }
    }

    /// Sends `cmd`, records it with its window, and answers as the spec would. A
    /// stalled session sends it only when the stall is over.
    pub async fn exec(&self, cmd: EtcdCommand) -> Result<EtcdReply, LockError> {
        self.wait_while_stalled().await;
        let begun = self.log.begin();
        let answer = self.send(&cmd).await;
        // The client reaches the cluster as one endpoint set: every request is node 0's.
        self.log
            .finish(begun, 0, None, cmd, answer.as_ref().ok().cloned());
        answer
    }

    /// A connection to member `at` alone (made on first use, recording into this
    /// session's log and stopped with it); `None` when it cannot be made now.
    async fn member<'m>(
        &self,
        members: &'m mut [Option<EtcdSession>],
        at: usize,
        limit: Duration,
    ) -> Option<&'m EtcdSession> {
        let slot = members.get_mut(at)?;
        if slot.is_none() {
            let endpoint = self.endpoints.get(at)?;
            // A member that is down must not hold the keep-alive past its limit.
            let made = Self::connect_with(
                std::slice::from_ref(endpoint),
                self.log.clone(),
                Some(limit),
                self.stalled_until.clone(),
            );
            *slot = tokio::time::timeout(limit, made).await.ok()?.ok();
        }
        slot.as_ref()
    }

    /// As [`EtcdSession::exec`], giving up after `limit` (recorded as no answer): a
    /// keep-alive caught on a member cut off from its quorum, which still takes requests
    /// it cannot commit, must not hold the lease's whole TTL before the next try goes
    /// elsewhere.
    async fn exec_within(&self, cmd: EtcdCommand, limit: Duration) -> Result<EtcdReply, LockError> {
        self.wait_while_stalled().await;
        let begun = self.log.begin();
        let answer = match tokio::time::timeout(limit, self.send(&cmd)).await {
            Ok(a) => a,
            Err(_) => Err(LockError::NoAnswer {
                node: self.endpoints.join(","),
                timeout: limit,
            }),
        };
        self.log
            .finish(begun, 0, None, cmd, answer.as_ref().ok().cloned());
        answer
    }

    async fn send(&self, cmd: &EtcdCommand) -> Result<EtcdReply, LockError> {
        let mut c = self.client.clone();
        if let Some((key, opts)) = range(cmd) {
            let r = c.get(key, opts).await.map_err(backend)?;
            return Ok(EtcdReply::Kvs(r.kvs().iter().map(kv).collect()));
        }
        Ok(match cmd {
            EtcdCommand::Grant { ttl } => {
                let r = c
                    .lease_grant(i64::try_from(*ttl).unwrap_or(i64::MAX), None)
                    .await
                    .map_err(backend)?;
                EtcdReply::Granted {
                    lease: r.id(),
                    ttl: u64::try_from(r.ttl()).unwrap_or(0),
                }
            }
            EtcdCommand::KeepAlive { lease } => {
                // Opening the stream already sends one keep-alive and reads its answer
                // (the TTL is not handed out), so the TTL is read from a second one: both
                // restart the lease inside the request's window, as one would. etcd
                // answers a lease that is gone with TTL 0, which etcd-client turns into
                // an error of its own.
                let (mut keeper, mut stream) = match c.lease_keep_alive(*lease).await {
                    Ok(s) => s,
                    Err(e) if not_found(&e) => return Ok(EtcdReply::LeaseNotFound),
                    Err(e) => return Err(backend(e)),
                };
                keeper.keep_alive().await.map_err(backend)?;
                match stream.message().await {
                    Ok(Some(r)) if r.ttl() > 0 => EtcdReply::Alive {
                        ttl: u64::try_from(r.ttl()).unwrap_or(0),
                    },
                    Ok(_) => EtcdReply::LeaseNotFound,
                    Err(e) if not_found(&e) => EtcdReply::LeaseNotFound,
                    Err(e) => return Err(backend(e)),
                }
            }
            EtcdCommand::Revoke { lease } => match c.lease_revoke(*lease).await {
                Ok(_) => EtcdReply::Revoked,
                Err(e) if not_found(&e) => EtcdReply::LeaseNotFound,
                Err(e) => return Err(backend(e)),
            },
            EtcdCommand::Put { key, value, lease } => {
                let opts = lease.map(|l| PutOptions::new().with_lease(l));
                match c.put(key.clone(), value.clone(), opts).await {
                    Ok(r) => EtcdReply::Put {
                        revision: r
                            .header()
                            .map_or(0, |h| u64::try_from(h.revision()).unwrap_or(0)),
                    },
                    Err(e) if not_found(&e) => EtcdReply::LeaseNotFound,
                    Err(e) => return Err(backend(e)),
                }
            }
            EtcdCommand::Delete { key } => {
                let r = c.delete(key.clone(), None).await.map_err(backend)?;
                EtcdReply::Deleted {
                    deleted: u64::try_from(r.deleted()).unwrap_or(0),
                }
            }
            EtcdCommand::Lock { name, lease } => {
                let opts = LockOptions::new().with_lease(*lease);
                match c.lock(name.clone(), Some(opts)).await {
                    Ok(r) => EtcdReply::Locked {
                        key: String::from_utf8_lossy(r.key()).into_owned(),
                    },
                    Err(e) if not_found(&e) => EtcdReply::LeaseNotFound,
                    Err(e) => return Err(backend(e)),
                }
            }
            EtcdCommand::Unlock { key } => {
                c.unlock(key.clone()).await.map_err(backend)?;
                EtcdReply::Unlocked
            }
            EtcdCommand::Txn {
                compare,
                success,
                failure,
            } => {
                let when: Vec<EtcdCompare> = compare
                    .iter()
                    .map(|Compare::CreateRevision { key, rev }| {
                        EtcdCompare::create_revision(
                            key.clone(),
                            CompareOp::Equal,
                            i64::try_from(*rev).unwrap_or(i64::MAX),
                        )
                    })
                    .collect();
                let ops = |o: &[EtcdCommand]| -> Result<Vec<TxnOp>, LockError> {
                    o.iter()
                        .map(|x| {
                            txn_op(x).ok_or_else(|| LockError::UnexpectedReply {
                                command: locklab_models::etcd::spec::command_text(x),
                                reply: "not a Txn request".into(),
                            })
                        })
                        .collect()
                };
                let txn = Txn::new()
                    .when(when)
                    .and_then(ops(success)?)
                    .or_else(ops(failure)?);
                let r = match c.txn(txn).await {
                    Ok(r) => r,
                    Err(e) if not_found(&e) => return Ok(EtcdReply::LeaseNotFound),
                    Err(e) => return Err(backend(e)),
                };
                let revision = r
                    .header()
                    .map_or(0, |h| u64::try_from(h.revision()).unwrap_or(0));
                let responses = r
                    .op_responses()
                    .iter()
                    .map(|o| match o {
                        TxnOpResponse::Put(_) => EtcdReply::Put { revision },
                        TxnOpResponse::Get(g) => EtcdReply::Kvs(g.kvs().iter().map(kv).collect()),
                        TxnOpResponse::Delete(d) => EtcdReply::Deleted {
                            deleted: u64::try_from(d.deleted()).unwrap_or(0),
                        },
                        TxnOpResponse::Txn(_) => EtcdReply::Invalid,
                    })
                    .collect();
                EtcdReply::Txn {
                    succeeded: r.succeeded(),
                    responses,
                }
            }
            _ => EtcdReply::Invalid,
        })
    }

    /// Whether `key` was deleted at a revision after `after_rev` (at once if it already
    /// was): `false` when the watch failed first. A waiter's wake-up call, never a
    /// decision (the waiter then asks again with recorded requests), so the watch is
    /// not a recorded request.
    pub async fn deleted(&self, key: &str, after_rev: u64) -> bool {
        let mut c = self.client.clone();
        let opts = WatchOptions::new()
            .with_start_revision(i64::try_from(after_rev.saturating_add(1)).unwrap_or(i64::MAX))
            .with_filters([WatchFilterType::NoPut]);
        let Ok((_watcher, mut stream)) = c.watch(key, Some(opts)).await else {
            return false;
        };
        loop {
            match stream.message().await {
                Ok(Some(r))
                    if r.events()
                        .iter()
                        .any(|e| e.event_type() == EventType::Delete) =>
                {
                    return true
                }
                Ok(Some(r)) if !r.canceled() => {}
                _ => return false,
            }
        }
    }

    /// Keeps `lease` alive every third of `ttl` until the lease is gone or the task is
    /// aborted; each keep-alive is a logged request. Stopping the process (SIGSTOP) or
    /// [`EtcdSession::stall`] stops it too, as the model's pause does.
    pub fn keep_alive(&self, lease: LeaseId, ttl: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut wait = ttl / 3;
            // A keep-alive gets a quarter of the TTL, on one member at a time, and a
            // failed one moves to the next member: one that hangs (a member cut off from
            // its quorum that has not yet stepped down takes requests it cannot commit)
            // costs a quarter of the lease, and the next try reaches another member
            // before the lease runs out — the model's premise, made certain rather than
            // left to the balancer's choice.
            let limit = (ttl / 4).min(REQUEST_TIMEOUT);
            let mut members: Vec<Option<EtcdSession>> = vec![None; me.endpoints.len()];
            let mut at = 0;
            loop {
                tokio::time::sleep(wait).await;
                // A member that cannot be reached now: this try goes through the
                // balancer, the next one to the next member.
                let (answer, reached) = match me.member(&mut members, at, limit).await {
                    Some(m) => (m.exec_within(EtcdCommand::KeepAlive { lease }, limit).await, true),
                    None => (me.exec_within(EtcdCommand::KeepAlive { lease }, limit).await, false),
                };
                if answer.is_err() || !reached {
                    at = (at + 1) % members.len().max(1);
                }
                wait = match answer {
                    Ok(EtcdReply::Alive { .. }) => ttl / 3,
                    // A failed try (no leader where it landed, a timeout) is retried
                    // soon, on the next member, rather than a third of the TTL later.
                    Err(_) => KEEP_ALIVE_RETRY.min(ttl / 3),
                    Ok(_) => return,
                }
            }
        })
    }
}
