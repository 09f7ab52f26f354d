//! A ZooKeeper session speaking the spec's requests: each [`ZkCommand`] is sent as the
//! request it names and its answer read back as a [`ZkReply`], so that what a lock does
//! on a real ensemble can be held against the semantics the models use. Every request
//! goes into the [`RequestLog`] with the window between its call and its answer; so
//! does each watch notification the client waits for and receives (as the spec's
//! `Consume`).
//!
//! What the real server answers and the spec words differently: `exists` carries no
//! data (recorded with empty data), `setData` answers the stat (recorded with the data
//! just written), sessions are the server's ids and a timeout is in milliseconds.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use locklab_models::zk::spec::{
    command_text, reply_text, Notification, SessionId, WatchKind, ZkCommand, ZkError, ZkReply,
    Znode,
};
use zookeeper_client as zk;

use crate::error::LockError;
use crate::recorder::{Begun, Recorder, Wire};

/// ZooKeeper's vocabulary for the shared [`Recorder`]: the spec's requests and replies.
#[derive(Clone, Debug, PartialEq)]
pub struct ZkWire;

impl Wire for ZkWire {
    type Command = ZkCommand;
    type Reply = ZkReply;

    fn key(command: &ZkCommand) -> Option<String> {
        request_path(command).map(str::to_string)
    }

    fn command_text(command: &ZkCommand) -> String {
        command_text(command)
    }

    fn reply_text(reply: &ZkReply) -> String {
        reply_text(reply)
    }
}

/// One request and what came back.
pub type Request = crate::recorder::Exchange<ZkWire>;

/// A shared, append-only request log; clone it into every session of a run.
pub type RequestLog = Recorder<ZkWire>;

/// The path a request is about: its path, or a `multi`'s first op's (the lock node of
/// the checked write).
pub fn request_path(cmd: &ZkCommand) -> Option<&str> {
    match cmd {
        ZkCommand::Create { path, .. }
        | ZkCommand::Delete { path, .. }
        | ZkCommand::Exists { path, .. }
        | ZkCommand::GetData { path, .. }
        | ZkCommand::SetData { path, .. }
        | ZkCommand::GetChildren { path, .. }
        | ZkCommand::Check { path, .. } => Some(path),
        ZkCommand::Multi { ops, .. } => ops.first().and_then(request_path),
        ZkCommand::Other { path, .. } => path.as_deref(),
        ZkCommand::Connect { .. } | ZkCommand::Ping { .. } | ZkCommand::Consume { .. } => None,
    }
}

fn backend(e: zk::Error) -> LockError {
    LockError::backend(e)
}

/// The server's answer as one of the spec's errors, or `None` when no answer says what
/// happened (a lost connection, a timeout, a closed client): the request may or may not
/// have taken effect.
fn spec_error(e: &zk::Error) -> Option<ZkError> {
    match e {
        zk::Error::NoNode => Some(ZkError::NoNode),
        zk::Error::NodeExists => Some(ZkError::NodeExists),
        zk::Error::BadVersion => Some(ZkError::BadVersion),
        zk::Error::SessionExpired => Some(ZkError::SessionExpired),
        _ => None,
    }
}

fn znode(stat: &zk::Stat, data: &[u8]) -> Znode {
    Znode {
        data: String::from_utf8_lossy(data).into_owned(),
        czxid: u64::try_from(stat.czxid).unwrap_or(0),
        mzxid: u64::try_from(stat.mzxid).unwrap_or(0),
        version: u32::try_from(stat.version).unwrap_or(0),
        ephemeral_owner: (stat.ephemeral_owner != 0).then_some(stat.ephemeral_owner as u64),
    }
}

fn version(v: Option<u32>) -> Option<i32> {
    v.map(|v| i32::try_from(v).unwrap_or(i32::MAX))
}

/// A watch a request left, not yet fired or not yet waited for to the end: kept across
/// attempts, so a notification that arrives while nobody waits is still read (and
/// recorded) by the next wait, as the server sent it once.
pub struct ZkWatch {
    changed: Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>,
    path: String,
    kind: WatchKind,
    /// When the first wait on it began: the window of the notification's `Consume`.
    since: Option<Begun>,
}

impl std::fmt::Debug for ZkWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkWatch")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl ZkWatch {
    fn new(watcher: zk::OneshotWatcher, path: &str, kind: WatchKind) -> Self {
        ZkWatch {
            changed: Box::pin(watcher.changed()),
            path: path.to_string(),
            kind,
            since: None,
        }
    }
}

/// What waiting on a [`ZkWatch`] came to.
#[derive(Debug)]
pub enum Woken {
    /// The watch fired (recorded as the notification the session read).
    Fired,
    /// Not yet: the watch is handed back to wait on later.
    Pending(ZkWatch),
    /// The session ended (expired or closed) first: the watch will never fire.
    SessionEnded,
}

/// A client session on the ensemble, recording every request.
#[derive(Clone)]
pub struct ZkSession {
    client: zk::Client,
    log: RequestLog,
    id: SessionId,
    /// How it was opened, so that a session the ensemble expired can be followed by a
    /// new one on the same servers ([`ZkSession::reopen`]); `None` over a client
    /// opened elsewhere.
    opened: Option<std::sync::Arc<Opened>>,
}

/// What [`ZkSession::connect`] was asked for.
#[derive(Debug)]
struct Opened {
    connect_string: String,
    timeout: Duration,
    detached: bool,
}

impl std::fmt::Debug for ZkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkSession")
            .field("session", &format_args!("{:#x}", self.id))
            .finish_non_exhaustive()
    }
}

impl ZkSession {
    /// Opens a session on `connect_string` (`host:port,…`) asking for `timeout`,
    /// recording the `connect` in `log`. A `detached` session is never closed by the
    /// client: when its last handle drops it ends as a crashed process's does, by
    /// expiring on the server.
    pub async fn connect(
        connect_string: &str,
        timeout: Duration,
        log: RequestLog,
        detached: bool,
    ) -> Result<Self, LockError> {
        let begun = log.begin();
        let connector = zk::Client::connector().with_session_timeout(timeout);
        let connector = if detached {
            connector.with_detached()
        } else {
            connector
        };
        let cmd = ZkCommand::Connect {
            timeout: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        match connector.connect(connect_string).await {
            Ok(client) => {
                let id = client.session_id().0 as u64;
                let reply = ZkReply::Connected { session: id };
                log.finish(begun, 0, Some(id), cmd, Some(reply));
                let opened = Some(std::sync::Arc::new(Opened {
                    connect_string: connect_string.to_string(),
                    timeout,
                    detached,
                }));
                Ok(ZkSession {
                    client,
                    log,
                    id,
                    opened,
                })
            }
            Err(e) => {
                log.finish(begun, 0, None, cmd, None);
                Err(backend(e))
            }
        }
    }

    /// The session over an already connected `client` (its `connect` not recorded).
    pub fn over(client: zk::Client, log: RequestLog) -> Self {
        let id = client.session_id().0 as u64;
        ZkSession {
            client,
            log,
            id,
            opened: None,
        }
    }

    /// Whether the ensemble expired the session (a client is told so once it reaches
    /// the ensemble again; every request of it fails from then on).
    pub fn expired(&self) -> bool {
        matches!(self.client.state(), zk::SessionState::Expired)
    }

    /// A new session on the same servers, asking for the same timeout, recorded in the
    /// same log: what Curator's client does after LOST, so that the process can lock
    /// again. An error for a session not opened by [`ZkSession::connect`].
    pub async fn reopen(&self) -> Result<ZkSession, LockError> {
        let opened = self.opened.as_ref().ok_or_else(|| LockError::NotHeld {
            key: format!("session {:#x}", self.id),
            reason: None,
        })?;
        Self::connect(
            &opened.connect_string,
            opened.timeout,
            self.log.clone(),
            opened.detached,
        )
        .await
    }

    /// The server's id of the session.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The client, for what the spec has no words for (its session state).
    pub fn client(&self) -> &zk::Client {
        &self.client
    }

    /// The request log.
    pub fn log(&self) -> &RequestLog {
        &self.log
    }

    /// Sends `cmd`, records it with its window, and answers as the spec would; an error
    /// the server answered (`NONODE`, …) is a reply, a lost answer is an error.
    pub async fn exec(&self, cmd: ZkCommand) -> Result<ZkReply, LockError> {
        self.exec_watched(cmd).await.map(|(reply, _)| reply)
    }

    /// [`ZkSession::exec`], also handing back the watch an `exists` or `getChildren`
    /// with `watch` left.
    pub async fn exec_watched(
        &self,
        cmd: ZkCommand,
    ) -> Result<(ZkReply, Option<ZkWatch>), LockError> {
        let begun = self.log.begin();
        let answer = self.send(&cmd).await;
        let recorded = match &answer {
            Ok((reply, _)) => Some(reply.clone()),
            Err(_) => None,
        };
        self.log.finish(begun, 0, Some(self.id), cmd, recorded);
        answer
    }

    /// Waits up to `d` for `watch` to fire. A notification is recorded as the session's
    /// `Consume` of it, its window from the first wait on the watch to its arrival.
    pub async fn wait(&self, mut watch: ZkWatch, d: Duration) -> Woken {
        let since = *watch.since.get_or_insert_with(|| self.log.begin());
        match tokio::time::timeout(d, &mut watch.changed).await {
            Err(_) => Woken::Pending(watch),
            Ok(event) if event.event_type == zk::EventType::Session => Woken::SessionEnded,
            Ok(_) => {
                let fired = Notification {
                    session: self.id,
                    path: watch.path.clone(),
                    kind: watch.kind,
                };
                self.log.finish(
                    since,
                    0,
                    Some(self.id),
                    ZkCommand::Consume { session: self.id },
                    Some(ZkReply::Notified(vec![fired])),
                );
                Woken::Fired
            }
        }
    }

    async fn send(&self, cmd: &ZkCommand) -> Result<(ZkReply, Option<ZkWatch>), LockError> {
        let c = &self.client;
        let answered = |r: Result<ZkReply, zk::Error>| match r {
            Ok(reply) => Ok((reply, None)),
            Err(e) => match spec_error(&e) {
                Some(code) => Ok((ZkReply::Error(code), None)),
                None => Err(backend(e)),
            },
        };
        match cmd {
            ZkCommand::Create {
                path,
                data,
                ephemeral,
                sequential,
                ..
            } => {
                let mode = match (ephemeral, sequential) {
                    (true, true) => zk::CreateMode::EphemeralSequential,
                    (true, false) => zk::CreateMode::Ephemeral,
                    (false, true) => zk::CreateMode::PersistentSequential,
                    (false, false) => zk::CreateMode::Persistent,
                };
                let options = mode.with_acls(zk::Acls::anyone_all());
                let r = c.create(path, data.as_bytes(), &options).await;
                answered(r.map(|(stat, seq)| ZkReply::Created {
                    path: if *sequential {
                        format!("{path}{seq}")
                    } else {
                        path.clone()
                    },
                    czxid: u64::try_from(stat.czxid).unwrap_or(0),
                }))
            }
            ZkCommand::Delete {
                path, version: v, ..
            } => answered(c.delete(path, version(*v)).await.map(|()| ZkReply::Ok)),
            ZkCommand::Exists { path, watch, .. } => {
                let stat = |s: Option<zk::Stat>| ZkReply::Stat(s.map(|s| znode(&s, &[])));
                if *watch {
                    match c.check_and_watch_stat(path).await {
                        Ok((s, w)) => Ok((stat(s), Some(ZkWatch::new(w, path, WatchKind::Node)))),
                        Err(e) => answered(Err(e)),
                    }
                } else {
                    answered(c.check_stat(path).await.map(stat))
                }
            }
            ZkCommand::GetData { path, .. } => answered(
                c.get_data(path)
                    .await
                    .map(|(data, s)| ZkReply::Stat(Some(znode(&s, &data)))),
            ),
            ZkCommand::SetData {
                path,
                data,
                version: v,
                ..
            } => answered(
                c.set_data(path, data.as_bytes(), version(*v))
                    .await
                    .map(|s| ZkReply::Stat(Some(znode(&s, data.as_bytes())))),
            ),
            ZkCommand::GetChildren { path, watch, .. } => {
                let sorted = |mut names: Vec<String>| {
                    names.sort();
                    ZkReply::Children(names)
                };
                if *watch {
                    match c.list_and_watch_children(path).await {
                        Ok((names, w)) => Ok((
                            sorted(names),
                            Some(ZkWatch::new(w, path, WatchKind::Children)),
                        )),
                        Err(e) => answered(Err(e)),
                    }
                } else {
                    answered(c.list_children(path).await.map(sorted))
                }
            }
            ZkCommand::Multi { ops, .. } => self.multi(ops).await.map(|r| (r, None)),
            ZkCommand::Connect { .. }
            | ZkCommand::Ping { .. }
            | ZkCommand::Check { .. }
            | ZkCommand::Consume { .. }
            | ZkCommand::Other { .. } => Err(LockError::Unsupported {
                protocol: "zookeeper",
                what: "connect, ping, a check outside a multi, reading watches as a request, or a request the spec does not model",
            }),
        }
    }

    async fn multi(&self, ops: &[ZkCommand]) -> Result<ZkReply, LockError> {
        let mut writer = self.client.new_multi_writer();
        for op in ops {
            let added = match op {
                ZkCommand::Check { path, version: v } => {
                    writer.add_check_version(path, version(*v).unwrap_or(-1))
                }
                ZkCommand::SetData {
                    path,
                    data,
                    version: v,
                    ..
                } => writer.add_set_data(path, data.as_bytes(), version(*v)),
                ZkCommand::Delete {
                    path, version: v, ..
                } => writer.add_delete(path, version(*v)),
                ZkCommand::Create {
                    path,
                    data,
                    ephemeral,
                    sequential,
                    ..
                } => {
                    let mode = match (ephemeral, sequential) {
                        (true, true) => zk::CreateMode::EphemeralSequential,
                        (true, false) => zk::CreateMode::Ephemeral,
                        (false, true) => zk::CreateMode::PersistentSequential,
                        (false, false) => zk::CreateMode::Persistent,
                    };
                    writer.add_create(
                        path,
                        data.as_bytes(),
                        &mode.with_acls(zk::Acls::anyone_all()),
                    )
                }
                _ => {
                    return Err(LockError::Unsupported {
                        protocol: "zookeeper",
                        what: "a read inside a multi",
                    })
                }
            };
            added.map_err(backend)?;
        }
        match writer.commit().await {
            Ok(results) => Ok(ZkReply::Multi(
                results
                    .into_iter()
                    .zip(ops)
                    .map(|(r, op)| match (r, op) {
                        (zk::MultiWriteResult::Create { path, stat }, _) => ZkReply::Created {
                            path,
                            czxid: u64::try_from(stat.czxid).unwrap_or(0),
                        },
                        (
                            zk::MultiWriteResult::SetData { stat },
                            ZkCommand::SetData { data, .. },
                        ) => ZkReply::Stat(Some(znode(&stat, data.as_bytes()))),
                        _ => ZkReply::Ok,
                    })
                    .collect(),
            )),
            Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                match spec_error(&source) {
                    Some(error) => Ok(ZkReply::MultiFailed { index, error }),
                    None => Err(backend(source)),
                }
            }
            Err(zk::MultiWriteError::RequestFailed { source }) => match spec_error(&source) {
                Some(code) => Ok(ZkReply::Error(code)),
                None => Err(backend(source)),
            },
        }
    }
}
