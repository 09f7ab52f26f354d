//! A client's step, phase by phase: the statement it sends on its session (`via`, the
//! pool's backend it reaches) in each phase of its lock, and the phase the reply leads
//! to.

use super::*;

impl SqlLockModel {
    /// Client `c`'s next step from `st` through session `via`, if it has one, with the
    /// statement it sent.
    pub(super) fn step(&self, st: &SqlLockState, c: usize, via: u8) -> Option<Effect> {
        let cl = &st.clients[c];
        if cl.phase == Phase::Done && self.starts_over(st) && cl.process.works() {
            if via != cl.session {
                return None;
            }
            let mut s = st.clone();
            self.again(&mut s, c);
            return Some(Effect::plain(s));
        }
        if !cl.process.works() || (self.pinned() && via != cl.session) {
            return None;
        }
        let mut s = st.clone();
        let mut turn = Turn { via, sent: None };
        let next = match cl.phase {
            // Its transaction is open (stage 0's BEGIN); it takes nothing and reads.
            Phase::Acquire(1) if self.bypasses(c) => Phase::Critical(0),
            Phase::Acquire(1) if self.lock.in_process() => {
                if s.mutex.is_some() {
                    return None;
                }
                s.mutex = Some(c as u8);
                Phase::Critical(0)
            }
            Phase::Acquire(k) if self.lock.queues(k) && !self.in_turn(st, c, via) => {
                // The statement reaches the server and waits behind the lock's holder
                // and every waiter that came before.
                if st.queue.contains(&(c as u8)) {
                    return None;
                }
                s.queue.push(c as u8);
                return Some(Effect::plain(s));
            }
            Phase::Acquire(k) => self.acquire(&mut s, &mut turn, c, cl, k)?,
            Phase::Fence => match turn.send(&mut s, SqlCommand::NextVal)? {
                SqlReply::Int(t) => {
                    s.clients[c].token = u64::try_from(t).unwrap_or(0);
                    Phase::Critical(0)
                }
                _ => {
                    s.clients[c].lost = true;
                    Phase::Done
                }
            },
            Phase::Critical(_) if !self.two_step_work() => Phase::Release,
            Phase::Critical(k) if self.work == Work::InTx => {
                let cmd = if k == 0 {
                    SqlCommand::ReadCounter
                } else {
                    SqlCommand::WriteCounter {
                        value: cl.read.saturating_add(1),
                    }
                };
                match turn.send(&mut s, cmd)? {
                    SqlReply::Int(v) => {
                        s.clients[c].read = u8::try_from(v).unwrap_or(u8::MAX);
                        Phase::Critical(1)
                    }
                    SqlReply::Rows(_) => Phase::Release,
                    _ => {
                        s.clients[c].lost = true;
                        Phase::Done
                    }
                }
            }
            Phase::Critical(k) => match s.resource.access(k, cl.token, self.fencing, cl.read) {
                Access::Read(v) => {
                    s.clients[c].read = v;
                    Phase::Critical(1)
                }
                Access::Refused | Access::Wrote => Phase::Release,
            },
            Phase::Release if self.lock.in_process() => {
                s.mutex = None;
                Phase::Commit
            }
            Phase::Release | Phase::Commit => self.release(&mut s, &mut turn, c, cl)?,
            Phase::Done | Phase::Crashed => return None,
        };
        s.clients[c].phase = next;
        if !next.holding() {
            s.clients[c].lease_until = None;
        }
        if !matches!(next, Phase::Acquire(k) if self.lock.queues(k)) {
            s.queue.retain(|&q| q as usize != c);
        }
        if next == Phase::Done && s.mutex == Some(c as u8) {
            // A statement failed (its session gone): the exception leaves the
            // synchronized method, and the lock with it.
            s.mutex = None;
        }
        Some(Effect {
            state: s,
            sent: turn.sent,
        })
    }

    /// Acquire statement `k` (the client's clock skewed by its fault), and where the
    /// reply leads: the next statement, a retry, the lock, or the client gone.
    fn acquire(
        &self,
        s: &mut SqlLockState,
        turn: &mut Turn,
        c: usize,
        cl: &Client,
        k: u8,
    ) -> Option<Phase> {
        let cmd = self.lock.acquire(k, &owner(c), s.now + cl.skew, self.ttl);
        let reply = turn.send(s, cmd)?;
        Some(match self.lock.acquired(k, &reply) {
            Acquired::Next => Phase::Acquire(k + 1),
            Acquired::Busy => Phase::Acquire(0),
            Acquired::Lost => {
                s.clients[c].lost = true;
                Phase::Done
            }
            Acquired::Got => {
                let me = &mut s.clients[c];
                me.session = turn.via;
                if let SqlReply::Inserted(id) = reply {
                    me.token = id;
                }
                if self.lock.timed() {
                    me.lease_until = Some(s.now + self.ttl);
                }
                if self.fencing && matches!(self.lock, Lock::Advisory) {
                    Phase::Fence
                } else {
                    Phase::Critical(0)
                }
            }
        })
    }

    /// The release (or the commit that ends the lock with its transaction): a delete
    /// of another client's row is a foreign release; a commit that wrote is counted.
    fn release(
        &self,
        s: &mut SqlLockState,
        turn: &mut Turn,
        c: usize,
        cl: &Client,
    ) -> Option<Phase> {
        let name = owner(c);
        let cmd = self.lock.release(&name, cl.token);
        let foreign = match &cmd {
            SqlCommand::DeleteByName { name: row } => {
                s.db.rows.get(row).is_some_and(|r| r.owner != name)
            }
            SqlCommand::DeleteById { id } => {
                s.db.rows.values().any(|r| r.id == *id && r.owner != name)
            }
            _ => false,
        };
        let wrote = s.db.sessions[turn.via as usize]
            .tx
            .as_ref()
            .is_some_and(|t| t.counter.is_some());
        let reply = turn.send(s, cmd.clone())?;
        if foreign {
            s.foreign_release.get_or_insert(c as u8);
        }
        if cmd == SqlCommand::Commit && reply == SqlReply::Ok && wrote {
            s.commits = s.commits.saturating_add(1);
        }
        if reply == SqlReply::ConnectionLost {
            s.clients[c].lost = true;
        }
        Some(Phase::Done)
    }
}

/// The session a step goes through, and the statement it sent with its reply.
struct Turn {
    via: u8,
    sent: Option<(u8, SqlCommand, SqlReply)>,
}

impl Turn {
    /// Runs `cmd` on the step's session; the reply, kept as what the step sent (`None`:
    /// the statement blocks).
    fn send(&mut self, s: &mut SqlLockState, cmd: SqlCommand) -> Option<SqlReply> {
        let (reply, db) = apply(&s.db, self.via, &cmd, s.db_now())?;
        s.db = db;
        self.sent = Some((self.via, cmd, reply.clone()));
        Some(reply)
    }
}
