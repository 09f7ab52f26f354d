//! What a ZooKeeper ensemble (as one linearizable tree) does with the requests the
//! ZooKeeper lock rows send: znodes with their `czxid`, `mzxid` and data version,
//! ephemeral nodes owned by a session, sequential nodes numbered from the parent's
//! `cversion`, sessions with a timeout that pings restart and whose expiry deletes the
//! session's ephemeral nodes, one-shot watches that turn into "notified" facts when they
//! fire, and `multi` with `check(path, version)`.
//!
//! Only what the rows need: parents are implicit (creating `/lock/n-` needs no `/lock`),
//! ACLs, the data of the lock nodes and connection state are left out. A watch fires by
//! leaving a [`Notification`] in the state: the client that set it reads it there, so
//! the models count wake-ups and the history checker sees what a client was told.
//!
//! Time is a [`Window`]: a model steps at one instant, a history at the window between a
//! request's call and its reply. A session whose deadline falls inside the window may or
//! may not have expired when the request took effect; [`ZkSpec::step`] lists both.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::spec::{expiry, Outcomes, Spec, Window};

// How a request and a reply read lives in `text.rs`; other crates name it here.
pub use super::text::{command_text, exchange_text, reply_text, state_lines};

mod command;
pub use command::{ZkCommand, ZkError, ZkReply};

/// The parent of the lock recipe's nodes.
pub const LOCK_DIR: &str = "/lock";

/// The persistent node the `multi`-checked work increments.
pub const COUNTER: &str = "/counter";

/// A session id (the models count from 1).
pub type SessionId = u64;

/// One node of the tree with the stat fields the recipes read; `exists`, `getData` and
/// `setData` reply with it whole.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Znode {
    /// Its data.
    pub data: String,
    /// The zxid of the create: a fencing token, since zxids only grow.
    pub czxid: u64,
    /// The zxid of the last write.
    pub mzxid: u64,
    /// The data version: 0 at create, +1 per `setData`.
    pub version: u32,
    /// The session that owns it, when ephemeral.
    pub ephemeral_owner: Option<SessionId>,
}

/// A live session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Session {
    /// The negotiated timeout.
    pub timeout: u64,
    /// When the server expires it unless a request or ping arrives first: the last
    /// one's window plus the timeout (a single instant in models).
    pub deadline: Window,
}

/// What a watch waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchKind {
    /// Set by `exists`/`getData`: fires when the node is created, changed or deleted.
    Node,
    /// Set by `getChildren`: fires when a child is created or deleted.
    Children,
}

/// A watch set by a session, or the notification of one that fired: ZooKeeper's watches
/// are one-shot, so firing moves it from `watches` to `notified`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Notification {
    /// The session that set it.
    pub session: SessionId,
    /// The watched path.
    pub path: String,
    /// What it watched.
    pub kind: WatchKind,
}

/// The ensemble's state, as one linearizable tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZkState {
    /// The last zxid: bumped by every write (and by every session's expiry that deletes).
    pub zxid: u64,
    /// Every znode by path.
    pub nodes: BTreeMap<String, Znode>,
    /// Each parent's `cversion` (child creates and deletes), the next sequence number.
    pub cversion: BTreeMap<String, u32>,
    /// Every live session.
    pub sessions: BTreeMap<SessionId, Session>,
    /// The id the next session gets, less one.
    pub last_session: SessionId,
    /// Watches set and not yet fired.
    pub watches: BTreeSet<Notification>,
    /// Watches that fired, until their session reads them ([`ZkCommand::Consume`]).
    pub notified: BTreeSet<Notification>,
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

fn name(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// The sequence number a sequential node's name ends with (ten digits), as recipes sort.
pub fn sequence(name: &str) -> Option<u32> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits.parse().ok()
}

impl ZkState {
    /// A tree holding one persistent node `path` with `data`, made as a `create` would
    /// (what a row sets up before its clients start).
    pub fn with_persistent(path: &str, data: &str) -> ZkState {
        let mut s = ZkState::default();
        let cmd = ZkCommand::Create {
            session: 0,
            path: path.to_string(),
            data: data.to_string(),
            ephemeral: false,
            sequential: false,
        };
        if s.write(&cmd, 0, 1).is_ok() {
            s.zxid = 1;
        }
        s
    }

    /// Fires and removes the watches of `kind` on `path`.
    fn fire(&mut self, path: &str, kind: WatchKind) {
        let fired: Vec<Notification> = self
            .watches
            .iter()
            .filter(|w| w.path == path && w.kind == kind)
            .cloned()
            .collect();
        for w in fired {
            self.watches.remove(&w);
            self.notified.insert(w);
        }
    }

    fn remove_node(&mut self, path: &str) {
        self.nodes.remove(path);
        *self.cversion.entry(parent(path).to_string()).or_default() += 1;
        self.fire(path, WatchKind::Node);
        self.fire(parent(path), WatchKind::Children);
    }

    /// Ends a session: its ephemeral nodes go (one zxid for the lot), its watches and
    /// unread notifications with it.
    pub fn close_session(&mut self, session: SessionId) {
        self.sessions.remove(&session);
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.ephemeral_owner == Some(session))
            .map(|(p, _)| p.clone())
            .collect();
        if !owned.is_empty() {
            self.zxid += 1;
        }
        for p in owned {
            self.remove_node(&p);
        }
        self.watches.retain(|w| w.session != session);
        self.notified.retain(|w| w.session != session);
    }

    /// Every live session with its deadline.
    fn deadlines(&self) -> Vec<(SessionId, Window)> {
        self.sessions
            .iter()
            .map(|(id, x)| (*id, x.deadline))
            .collect()
    }

    /// Whether a session's deadline has surely passed at `t`: what [`Self::expire_due`]
    /// would expire, asked without a copy to change.
    pub fn any_due(&self, t: u64) -> bool {
        !expiry::due(self.deadlines(), t).is_empty()
    }

    /// Expires every session whose deadline has surely passed at `t`; whether any did.
    pub fn expire_due(&mut self, t: u64) -> bool {
        let due = expiry::due(self.deadlines(), t);
        for id in &due {
            self.close_session(*id);
        }
        !due.is_empty()
    }

    /// The children of `path`, sorted by name.
    pub fn children(&self, path: &str) -> Vec<(String, u64)> {
        self.nodes
            .iter()
            .filter(|(p, _)| parent(p) == path && p.as_str() != path)
            .map(|(p, n)| (name(p).to_string(), n.czxid))
            .collect()
    }

    /// A write at zxid `zxid` in session `session`; `Err` when it fails.
    fn write(
        &mut self,
        cmd: &ZkCommand,
        session: SessionId,
        zxid: u64,
    ) -> Result<ZkReply, ZkError> {
        match cmd {
            ZkCommand::Create {
                path,
                data,
                ephemeral,
                sequential,
                ..
            } => {
                let dir = parent(path).to_string();
                let path = if *sequential {
                    let seq = self.cversion.get(&dir).copied().unwrap_or(0);
                    format!("{path}{seq:010}")
                } else {
                    path.clone()
                };
                if self.nodes.contains_key(&path) {
                    return Err(ZkError::NodeExists);
                }
                self.nodes.insert(
                    path.clone(),
                    Znode {
                        data: data.clone(),
                        czxid: zxid,
                        mzxid: zxid,
                        version: 0,
                        ephemeral_owner: ephemeral.then_some(session),
                    },
                );
                *self.cversion.entry(dir.clone()).or_default() += 1;
                self.fire(&path, WatchKind::Node);
                self.fire(&dir, WatchKind::Children);
                Ok(ZkReply::Created { path, czxid: zxid })
            }
            ZkCommand::Delete { path, version, .. } => {
                let n = self.nodes.get(path).ok_or(ZkError::NoNode)?;
                if version.is_some_and(|v| v != n.version) {
                    return Err(ZkError::BadVersion);
                }
                self.remove_node(path);
                Ok(ZkReply::Ok)
            }
            ZkCommand::SetData {
                path,
                data,
                version,
                ..
            } => {
                let n = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
                if version.is_some_and(|v| v != n.version) {
                    return Err(ZkError::BadVersion);
                }
                n.data = data.clone();
                n.mzxid = zxid;
                n.version += 1;
                let stat = n.clone();
                self.fire(path, WatchKind::Node);
                Ok(ZkReply::Stat(Some(stat)))
            }
            ZkCommand::Check { path, version } => {
                let n = self.nodes.get(path).ok_or(ZkError::NoNode)?;
                if version.is_some_and(|v| v != n.version) {
                    return Err(ZkError::BadVersion);
                }
                Ok(ZkReply::Ok)
            }
            _ => Err(ZkError::Invalid),
        }
    }

    /// Runs `cmd` at an instant `t` after the sessions due by then expired.
    fn exec(&mut self, cmd: &ZkCommand, t: u64) -> ZkReply {
        if let ZkCommand::Connect { timeout } = cmd {
            self.last_session += 1;
            let session = self.last_session;
            self.sessions.insert(
                session,
                Session {
                    timeout: *timeout,
                    deadline: Window::at(t + timeout),
                },
            );
            return ZkReply::Connected { session };
        }
        let session = match cmd {
            ZkCommand::Ping { session }
            | ZkCommand::Create { session, .. }
            | ZkCommand::Delete { session, .. }
            | ZkCommand::Exists { session, .. }
            | ZkCommand::GetData { session, .. }
            | ZkCommand::SetData { session, .. }
            | ZkCommand::GetChildren { session, .. }
            | ZkCommand::Multi { session, .. }
            | ZkCommand::Consume { session } => *session,
            // Nothing is known of an unmodelled request's effect: a check that needs
            // one leaves it out.
            ZkCommand::Connect { .. } | ZkCommand::Check { .. } | ZkCommand::Other { .. } => {
                return ZkReply::Error(ZkError::Invalid)
            }
        };
        // Every request a session sends restarts its timeout, as a ping does.
        let Some(s) = self.sessions.get_mut(&session) else {
            return ZkReply::Error(ZkError::SessionExpired);
        };
        s.deadline = Window::at(t + s.timeout);
        let watch = |st: &mut ZkState, path: &str, kind: WatchKind| {
            st.watches.insert(Notification {
                session,
                path: path.to_string(),
                kind,
            });
        };
        match cmd {
            ZkCommand::Ping { .. } => ZkReply::Ok,
            ZkCommand::Exists { path, watch: w, .. } => {
                if *w {
                    watch(self, path, WatchKind::Node);
                }
                ZkReply::Stat(self.nodes.get(path).cloned())
            }
            ZkCommand::GetData { path, .. } => match self.nodes.get(path) {
                Some(n) => ZkReply::Stat(Some(n.clone())),
                None => ZkReply::Error(ZkError::NoNode),
            },
            ZkCommand::GetChildren { path, watch: w, .. } => {
                if *w {
                    watch(self, path, WatchKind::Children);
                }
                ZkReply::Children(self.children(path).into_iter().map(|c| c.0).collect())
            }
            ZkCommand::Consume { .. } => {
                let mine: Vec<Notification> = self
                    .notified
                    .iter()
                    .filter(|n| n.session == session)
                    .cloned()
                    .collect();
                for n in &mine {
                    self.notified.remove(n);
                }
                ZkReply::Notified(mine)
            }
            ZkCommand::Multi { ops, .. } => {
                let zxid = self.zxid + 1;
                let mut next = self.clone();
                let mut results = Vec::with_capacity(ops.len());
                for (index, op) in ops.iter().enumerate() {
                    match next.write(op, session, zxid) {
                        Ok(r) => results.push(r),
                        Err(error) => return ZkReply::MultiFailed { index, error },
                    }
                }
                if ops.iter().any(|o| !matches!(o, ZkCommand::Check { .. })) {
                    next.zxid = zxid;
                }
                *self = next;
                ZkReply::Multi(results)
            }
            _ => {
                let zxid = self.zxid + 1;
                match self.write(cmd, session, zxid) {
                    Ok(r) => {
                        self.zxid = zxid;
                        r
                    }
                    Err(e) => ZkReply::Error(e),
                }
            }
        }
    }
}

/// The reply and next state when `cmd` takes effect at instant `t`: the models' step.
pub fn apply(state: &ZkState, cmd: &ZkCommand, t: u64) -> (ZkReply, ZkState) {
    let mut s = state.clone();
    s.expire_due(t);
    let reply = s.exec(cmd, t);
    (reply, s)
}

/// The ensemble as a [`Spec`]: the history checker's model of ZooKeeper's tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ZkSpec;

impl Spec for ZkSpec {
    type State = ZkState;
    type Input = ZkCommand;
    type Output = ZkReply;

    fn init(&self) -> ZkState {
        ZkState::default()
    }

    /// Sessions surely due at the window's start have expired; each session whose
    /// deadline the window reaches may or may not have.
    fn step(&self, state: &ZkState, cmd: &ZkCommand, at: Window) -> Outcomes<ZkReply, ZkState> {
        let mut base = state.clone();
        base.expire_due(at.lo);
        let sessions = base.deadlines();
        expiry::outcomes(base, sessions, at, Self::State::close_session, |s, t| {
            s.exec(cmd, t)
        })
    }

    fn describe(cmd: &ZkCommand, reply: Option<&ZkReply>) -> String {
        exchange_text(cmd, reply)
    }
}

#[cfg(test)]
mod tests;
