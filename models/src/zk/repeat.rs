//! ZooKeeper clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client creates its next node in the session it has (a new session after it lost
//! its own, as Curator's does after LOST), and a state is stored with its counters
//! renumbered — zxids, sequence numbers, session ids, the protected counters — and,
//! past the horizon, its sessions' deadlines moved back with the clock. Sequence
//! numbers, session ids and zxids are read only in order and for equality, and each
//! next one is one past the greatest, so their plain ranks ([`Ranks::dense`]) keep
//! each future.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::kernel::repeat::{Ranks, Rebase};

use super::model::{Client, Phase, ZkLockModel, ZkLockState};
use super::spec::{
    sequence, Notification, Session, SessionId, WatchKind, ZkState, COUNTER, LOCK_DIR,
};

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
        // The ensemble is shared with the state this one was copied from: each part of
        // the rebase copies it only where it changes it, which most successors' do not.
        let moved = |x: &Session| (r.deadline(x.deadline.lo), r.deadline(x.deadline.hi));
        if s.zk
            .sessions
            .values()
            .any(|x| moved(x) != (x.deadline.lo, x.deadline.hi))
        {
            for x in Arc::make_mut(&mut s.zk).sessions.values_mut() {
                (x.deadline.lo, x.deadline.hi) = moved(x);
            }
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
        if s.zk.watches.iter().any(|w| watch_is_dead(&s.zk, w)) {
            drop_dead_watches(Arc::make_mut(&mut s.zk));
        }
        renumber_zxids(&mut s);
        renumber_sequences(&mut s);
        renumber_sessions(&mut s);
        // Nothing compares a node's data version: every request the recipes send
        // leaves it unchecked.
        if s.zk.nodes.values().any(|n| n.version != 0)
            || s.zk.nodes.get(COUNTER).is_some_and(|n| n.data != "0")
        {
            let zk = Arc::make_mut(&mut s.zk);
            for n in zk.nodes.values_mut() {
                n.version = 0;
            }
            if let Some(n) = zk.nodes.get_mut(COUNTER) {
                n.data = "0".into();
            }
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
    let dead: Vec<Notification> = zk
        .watches
        .iter()
        .filter(|w| watch_is_dead(zk, w))
        .cloned()
        .collect();
    for w in &dead {
        zk.watches.remove(w);
    }
}

/// Whether watch `w` of `zk` can never fire ([`drop_dead_watches`]).
fn watch_is_dead(zk: &ZkState, w: &Notification) -> bool {
    let next = zk.cversion.get(LOCK_DIR).copied().unwrap_or(0);
    match sequence(&w.path) {
        Some(q) if w.kind == WatchKind::Node => q < next && !zk.nodes.contains_key(&w.path),
        _ => false,
    }
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
    if ranks.is_identity() {
        return;
    }
    let zk = Arc::make_mut(&mut s.zk);
    zk.zxid = ranks.get(zk.zxid);
    for n in zk.nodes.values_mut() {
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
    if ranks.is_identity() {
        return;
    }
    let rename = |name: &str| -> String {
        match sequence(name) {
            Some(q) => {
                let (head, _) = name.split_at(name.len() - 10);
                format!("{head}{:010}", ranks.get(u64::from(q)))
            }
            None => name.to_string(),
        }
    };
    let zk = Arc::make_mut(&mut s.zk);
    zk.nodes = std::mem::take(&mut zk.nodes)
        .into_iter()
        .map(|(p, n)| (rename(&p), n))
        .collect();
    if let Some(q) = zk.cversion.get_mut(LOCK_DIR) {
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
    zk.watches = renamed(&zk.watches);
    zk.notified = renamed(&zk.notified);
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
    if ranks.is_identity() {
        return;
    }
    let zk = Arc::make_mut(&mut s.zk);
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
