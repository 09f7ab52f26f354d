//! ZooKeeper clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client creates its next node in the session it has (a new session after it lost
//! its own, as Curator's does after LOST), and a state is stored with its counters
//! renumbered — zxids, sequence numbers, session ids, the protected counters — and,
//! past the horizon, its sessions' deadlines moved back with the clock. Sequence
//! numbers, session ids and zxids are read only in order and for equality, and each
//! next one is one past the greatest, so their plain ranks ([`Ranks::dense`]) keep
//! each future.

use std::collections::{BTreeMap, BTreeSet};

use crate::kernel::repeat::{Ranks, Rebase};

use super::model::{Client, Phase, ZkLockModel, ZkLockState};
use super::spec::{sequence, Notification, SessionId, WatchKind, ZkState, COUNTER, LOCK_DIR};

impl ZkLockModel {
    /// A client before its first step: what each starts as.
    pub(super) fn fresh(&self) -> Client {
        Client {
            phase: Phase::Connect,
            process: Default::default(),
            session: None,
            node: None,
            token: 0,
            pred: None,
            read: 0,
            lost: false,
            wakeups: 0,
        }
    }

    /// Whether a finished client asks for the lock again: where clients start over,
    /// once the faults are over (before, each locks once, as in every other check).
    pub(super) fn starts_over(&self, s: &ZkLockState) -> bool {
        crate::kernel::repeat::starts_over(self.repeat, s.now, self.horizon)
    }

    /// Client `c` of `s` starting over: its next node in its session while that
    /// lives, a new session once it is gone.
    pub(super) fn again(&self, s: &ZkLockState, c: usize) -> Client {
        let cl = &s.clients[c];
        let live = cl.session.filter(|id| s.zk.sessions.contains_key(id));
        Client {
            phase: if live.is_some() {
                Phase::Create
            } else {
                Phase::Connect
            },
            process: cl.process,
            session: live,
            ..self.fresh()
        }
    }

    /// The state stored for `s`: `s` itself where clients lock once, otherwise with its
    /// counters renumbered and, past the horizon, its clock moved back.
    pub(super) fn rebased(&self, mut s: ZkLockState) -> ZkLockState {
        if !self.repeat {
            return s;
        }
        let r = Rebase::past(self.horizon, s.now).unwrap_or(Rebase::stay(s.now));
        s.now = r.now();
        for x in s.zk.sessions.values_mut() {
            (x.deadline.lo, x.deadline.hi) = (r.deadline(x.deadline.lo), r.deadline(x.deadline.hi));
        }
        // What a client reads again only in some phases is dropped in the others.
        for c in &mut s.clients {
            if c.phase != Phase::Watch {
                c.pred = None;
            }
            // A node's czxid is its holder's token from the moment it is made.
            if matches!(c.phase, Phase::Done | Phase::Connect | Phase::Create) {
                c.node = None;
                c.token = 0;
            }
            c.wakeups = 0;
        }
        drop_dead_watches(&mut s.zk);
        renumber_zxids(&mut s);
        renumber_sequences(&mut s);
        renumber_sessions(&mut s);
        // Nothing compares a node's data version: every request the recipes send
        // leaves it unchecked.
        for n in s.zk.nodes.values_mut() {
            n.version = 0;
        }
        if let Some(n) = s.zk.nodes.get_mut(COUNTER) {
            n.data = "0".into();
        }
        s.commits = 0;
        s.resource
            .forget_counts(s.clients.iter_mut().map(|c| &mut c.read));
        s
    }
}

/// Drops the watches that can never fire: those set on a sequential node under
/// `/lock` that is gone, whose number the parent will not give again (sequence numbers
/// only grow). The recipe's `exists` on a predecessor that was already gone leaves one.
fn drop_dead_watches(zk: &mut ZkState) {
    let next = zk.cversion.get(LOCK_DIR).copied().unwrap_or(0);
    let nodes = &zk.nodes;
    zk.watches.retain(|w| match sequence(&w.path) {
        Some(q) if w.kind == WatchKind::Node => q >= next || nodes.contains_key(&w.path),
        _ => true,
    });
}

/// The zxids of `s` — the last one, each node's create and last write, the tokens
/// holders present and the highest the resource saw — renumbered.
fn renumber_zxids(s: &mut ZkLockState) {
    let nodes = s.zk.nodes.values().flat_map(|n| [n.czxid, n.mzxid]);
    let tokens = s.clients.iter().map(|c| c.token);
    let ranks = Ranks::dense(
        nodes.chain(tokens).chain([s.zk.zxid, s.resource.max_token]),
        1,
    );
    s.zk.zxid = ranks.get(s.zk.zxid);
    for n in s.zk.nodes.values_mut() {
        (n.czxid, n.mzxid) = (ranks.get(n.czxid), ranks.get(n.mzxid));
    }
    for c in &mut s.clients {
        c.token = ranks.get(c.token);
    }
    s.resource.max_token = ranks.get(s.resource.max_token);
}

/// The sequence numbers under `/lock` — in node names, in the names clients know and
/// watch, and the next one the parent gives — renumbered.
fn renumber_sequences(s: &mut ZkLockState) {
    let in_names = |n: &str| sequence(n).map(u64::from);
    let mut seen: Vec<u64> = Vec::new();
    seen.extend(s.zk.nodes.keys().filter_map(|p| in_names(p)));
    for c in &s.clients {
        seen.extend(c.node.iter().chain(&c.pred).filter_map(|n| in_names(n)));
    }
    let watched = s.zk.watches.iter().chain(&s.zk.notified);
    seen.extend(watched.filter_map(|w| in_names(&w.path)));
    let next = s.zk.cversion.get(LOCK_DIR).copied().map(u64::from);
    seen.extend(next);
    let ranks = Ranks::dense(seen, 0);
    let rename = |name: &str| -> String {
        match sequence(name) {
            Some(q) => {
                let (head, _) = name.split_at(name.len() - 10);
                format!("{head}{:010}", ranks.get(u64::from(q)))
            }
            None => name.to_string(),
        }
    };
    s.zk.nodes = std::mem::take(&mut s.zk.nodes)
        .into_iter()
        .map(|(p, n)| (rename(&p), n))
        .collect();
    if let Some(q) = s.zk.cversion.get_mut(LOCK_DIR) {
        *q = u32::try_from(ranks.get(u64::from(*q))).unwrap_or(u32::MAX);
    }
    for c in &mut s.clients {
        c.node = c.node.as_deref().map(rename);
        c.pred = c.pred.as_deref().map(rename);
    }
    let renamed = |set: &BTreeSet<Notification>| -> BTreeSet<Notification> {
        set.iter()
            .map(|w| Notification {
                path: rename(&w.path),
                ..w.clone()
            })
            .collect()
    };
    s.zk.watches = renamed(&s.zk.watches);
    s.zk.notified = renamed(&s.zk.notified);
}

/// The session ids — the ensemble's sessions, the last id given, each client's, each
/// ephemeral node's owner and each watch's — renumbered.
fn renumber_sessions(s: &mut ZkLockState) {
    let zk = &s.zk;
    let ids = zk
        .sessions
        .keys()
        .copied()
        .chain([zk.last_session])
        .chain(s.clients.iter().filter_map(|c| c.session))
        .chain(zk.nodes.values().filter_map(|n| n.ephemeral_owner))
        .chain(zk.watches.iter().chain(&zk.notified).map(|w| w.session));
    let ranks = Ranks::dense(ids.collect::<Vec<SessionId>>(), 1);
    let zk = &mut s.zk;
    zk.sessions = std::mem::take(&mut zk.sessions)
        .into_iter()
        .map(|(id, x)| (ranks.get(id), x))
        .collect::<BTreeMap<_, _>>();
    zk.last_session = ranks.get(zk.last_session);
    for n in zk.nodes.values_mut() {
        n.ephemeral_owner = n.ephemeral_owner.map(|o| ranks.get(o));
    }
    let renamed = |set: &BTreeSet<Notification>| -> BTreeSet<Notification> {
        set.iter()
            .map(|w| Notification {
                session: ranks.get(w.session),
                ..w.clone()
            })
            .collect()
    };
    zk.watches = renamed(&zk.watches);
    zk.notified = renamed(&zk.notified);
    for c in &mut s.clients {
        c.session = c.session.map(|id| ranks.get(id));
    }
}
