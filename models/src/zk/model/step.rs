//! A client's step, phase by phase: the request it sends the ensemble in each phase of
//! the recipe, and the phase the reply leads to.

use super::*;

impl ZkLockModel {
    /// Client `c`'s next step from `st`, if it has one, with the request it sent.
    pub(super) fn step(&self, st: &ZkLockState, c: usize) -> Option<Effect> {
        if st.clients[c].phase == Phase::Done
            && self.starts_over(st)
            && st.clients[c].process.works()
        {
            let mut s = st.clone();
            s.clients[c] = self.again(st, c);
            return Some(Effect::plain(s));
        }
        let cl = st.clients[c].clone();
        if !cl.phase.running() || !self.may_step(&cl) {
            return None;
        }
        let mut s = st.clone();
        let mut turn = Turn {
            c,
            session: cl.session.unwrap_or(0),
            sent: None,
        };
        let next = match cl.phase {
            Phase::Connect => {
                let timeout = self.timeout;
                match turn.send(&mut s, ZkCommand::Connect { timeout }) {
                    ZkReply::Connected { session } => {
                        s.clients[c].session = Some(session);
                        Phase::Create
                    }
                    _ => return None,
                }
            }
            Phase::Create if !self.recipe.sequential => self.create_plain(&mut s, &mut turn),
            Phase::Create => self.create_sequential(&mut s, &mut turn),
            Phase::Find => self.find_own(&mut s, &mut turn),
            Phase::List => self.list(&mut s, &mut turn, &cl),
            Phase::Watch => {
                let pred = cl.pred.as_deref().unwrap_or_default();
                let cmd = ZkCommand::Exists {
                    session: turn.session,
                    path: lock_path(pred),
                    watch: true,
                };
                match turn.send(&mut s, cmd) {
                    ZkReply::Stat(Some(_)) => Phase::Wait,
                    ZkReply::Stat(None) => self.try_again(),
                    _ => self.give_up(&mut s, c),
                }
            }
            Phase::Wait => {
                // Nothing to do until a watch of its session has fired — or the session
                // itself is gone (a leap of the leader's clock), which the client is
                // told as it waits.
                if !st.zk.sessions.contains_key(&turn.session) {
                    let phase = self.give_up(&mut s, c);
                    s.clients[c].phase = phase;
                    return Some(Effect {
                        state: s,
                        sent: turn.sent,
                    });
                }
                if !st.zk.notified.iter().any(|n| n.session == turn.session) {
                    return None;
                }
                let session = turn.session;
                match turn.send(&mut s, ZkCommand::Consume { session }) {
                    ZkReply::Notified(n) => {
                        let woken = &mut s.clients[c].wakeups;
                        *woken = woken.saturating_add(n.len() as u8);
                        self.try_again()
                    }
                    _ => self.give_up(&mut s, c),
                }
            }
            Phase::Critical(k) => self.work(&mut s, &mut turn, &cl, k),
            Phase::Release => {
                let me = cl.node.as_deref().unwrap_or_default();
                let cmd = ZkCommand::Delete {
                    session: turn.session,
                    path: lock_path(me),
                    version: None,
                };
                turn.send(&mut s, cmd);
                Phase::Done
            }
            Phase::Done | Phase::Crashed => return None,
        };
        s.clients[c].phase = next;
        Some(Effect {
            state: s,
            sent: turn.sent,
        })
    }

    /// The plain-znode lock's create: the holder's, or a watch on the holder's node.
    fn create_plain(&self, s: &mut ZkLockState, turn: &mut Turn) -> Phase {
        let cmd = ZkCommand::Create {
            session: turn.session,
            path: lock_path(PLAIN_NODE),
            data: String::new(),
            ephemeral: true,
            sequential: false,
        };
        let c = turn.c;
        match turn.send(s, cmd) {
            ZkReply::Created { czxid, .. } => {
                s.clients[c].node = Some(PLAIN_NODE.into());
                s.clients[c].token = czxid;
                Phase::Critical(0)
            }
            ZkReply::Error(ZkError::NodeExists) => {
                s.clients[c].pred = Some(PLAIN_NODE.into());
                Phase::Watch
            }
            _ => self.give_up(s, c),
        }
    }

    /// The recipe's create of an ephemeral sequential node, which is the client's place
    /// in the queue.
    fn create_sequential(&self, s: &mut ZkLockState, turn: &mut Turn) -> Phase {
        let c = turn.c;
        let cmd = ZkCommand::Create {
            session: turn.session,
            path: self.prefix(c),
            data: String::new(),
            ephemeral: true,
            sequential: true,
        };
        match turn.send(s, cmd) {
            ZkReply::Created { path, czxid } => {
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                s.clients[c].node = Some(name);
                s.clients[c].token = czxid;
                Phase::List
            }
            _ => self.give_up(s, c),
        }
    }

    /// After a create whose reply was lost, the protected recipe looks for a node with
    /// its own id in the name.
    fn find_own(&self, s: &mut ZkLockState, turn: &mut Turn) -> Phase {
        let c = turn.c;
        match turn.send(s, turn.list(false)) {
            ZkReply::Children(children) => {
                let mine = format!("c{c}-");
                match children.into_iter().find(|n| n.starts_with(&mine)) {
                    Some(name) => {
                        // The recipe reads its node's czxid with a getData; the node is
                        // its own, in its live session, so the model reads it here.
                        let czxid = s.zk.nodes.get(&lock_path(&name)).map_or(0, |n| n.czxid);
                        s.clients[c].node = Some(name);
                        s.clients[c].token = czxid;
                        Phase::List
                    }
                    None => Phase::Create,
                }
            }
            _ => self.give_up(s, c),
        }
    }

    /// The queue, read: the lowest node owns the lock; any other watches its
    /// predecessor (or, the herd, the whole directory).
    fn list(&self, s: &mut ZkLockState, turn: &mut Turn, cl: &Client) -> Phase {
        let c = turn.c;
        let parent = self.recipe.watch_on == WatchOn::Parent;
        match turn.send(s, turn.list(parent)) {
            ZkReply::Children(mut children) => {
                children.sort_by_key(|n| sequence(n));
                let me = cl.node.as_deref().unwrap_or_default();
                match children.iter().position(|n| n == me) {
                    None => self.give_up(s, c),
                    Some(0) => Phase::Critical(0),
                    Some(_) if parent => Phase::Wait,
                    Some(i) => {
                        s.clients[c].pred = Some(children[i - 1].clone());
                        Phase::Watch
                    }
                }
            }
            _ => self.give_up(s, c),
        }
    }

    /// Step `k` of the work inside the section: a counter in ZooKeeper written by a
    /// multi that checks the lock node, or the outside resource (fenced or not).
    fn work(&self, s: &mut ZkLockState, turn: &mut Turn, cl: &Client, k: u8) -> Phase {
        let c = turn.c;
        match self.work {
            Work::MultiChecked if k == 0 => {
                let cmd = ZkCommand::GetData {
                    session: turn.session,
                    path: COUNTER.into(),
                };
                match turn.send(s, cmd) {
                    ZkReply::Stat(Some(n)) => {
                        s.clients[c].read = n.data.parse().unwrap_or(0);
                        Phase::Critical(1)
                    }
                    _ => self.give_up(s, c),
                }
            }
            Work::MultiChecked => {
                let me = cl.node.as_deref().unwrap_or_default();
                let cmd = ZkCommand::Multi {
                    session: turn.session,
                    ops: vec![
                        ZkCommand::Check {
                            path: lock_path(me),
                            version: None,
                        },
                        ZkCommand::SetData {
                            session: turn.session,
                            path: COUNTER.into(),
                            data: cl.read.saturating_add(1).to_string(),
                            version: None,
                        },
                    ],
                };
                if let ZkReply::Multi(_) = turn.send(s, cmd) {
                    s.commits = s.commits.saturating_add(1);
                }
                Phase::Release
            }
            Work::Outside | Work::Fenced => {
                let fenced = self.work == Work::Fenced;
                match s.resource.access(k, cl.token, fenced, cl.read) {
                    Access::Read(v) => {
                        s.clients[c].read = v;
                        Phase::Critical(1)
                    }
                    Access::Refused | Access::Wrote => Phase::Release,
                }
            }
        }
    }
}

/// The client taking a step, its session, and the request it sent with the reply.
struct Turn {
    c: usize,
    session: SessionId,
    sent: Option<(ZkCommand, ZkReply)>,
}

impl Turn {
    /// Applies `cmd` to the ensemble; the reply, kept as what the step sent.
    fn send(&mut self, s: &mut ZkLockState, cmd: ZkCommand) -> ZkReply {
        let (reply, zk) = apply(&s.zk, &cmd, s.now);
        s.zk = zk.into();
        self.sent = Some((cmd, reply.clone()));
        reply
    }

    /// The lock directory's children, with a watch on it or without.
    fn list(&self, watch: bool) -> ZkCommand {
        ZkCommand::GetChildren {
            session: self.session,
            path: LOCK_DIR.into(),
            watch,
        }
    }
}
