//! What every action but a client's step does: time, the reaper, a killed session, a
//! skewed client clock, a rolled-back commit, the reaper's death, a leap of the
//! server's clock, and the kernel's pause, resume and crash.

use super::*;

impl SqlLockModel {
    /// What `a` does to `st`, with the statement it sent, if it is enabled.
    pub(in crate::sql) fn effect(&self, st: &SqlLockState, a: &Action) -> Option<Effect> {
        // Cloned only once an action is enabled: most actions a state offers are not,
        // and a clone copies the server's tables.
        match *a {
            Action::Step { client, via } => self.step(st, client as usize, via),
            Action::Tick => {
                if !self.may_tick(st) {
                    return None;
                }
                let mut s = st.clone();
                s.now += 1;
                Some(Effect::plain(s))
            }
            Action::Reap => {
                let due = st
                    .db
                    .rows
                    .values()
                    .any(|r| SqlState::reapable(r, st.db_now(), self.ttl));
                if !self.reaping(st) || !due {
                    return None;
                }
                let cmd = SqlCommand::Reap { ttl: self.ttl };
                // The reaper runs on a session of its own, never killed.
                let mut s = st.clone();
                let mut db = s.db.clone();
                db.sessions.push(crate::sql::spec::Session {
                    alive: true,
                    tx: None,
                });
                let reaper_session = (db.sessions.len() - 1) as u8;
                let (reply, mut db) = apply(&db, reaper_session, &cmd, s.db_now())?;
                db.sessions.pop();
                s.db = db;
                Some(Effect {
                    state: s,
                    sent: Some((reaper_session, cmd, reply)),
                })
            }
            Action::Kill(x) => {
                let holder = st
                    .clients
                    .iter()
                    .any(|c| c.session == x && c.phase.holding());
                let alive = st.db.sessions.get(x as usize).is_some_and(|x| x.alive);
                if !st.budget.has(Fault::Kill) || !holder || !alive || self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                s.db.kill(x);
                s.budget.spend(Fault::Kill);
                Some(Effect::plain(s))
            }
            Action::Skew(c) => {
                let cl = &st.clients[c as usize];
                let acquiring = matches!(cl.phase, Phase::Acquire(_));
                if !st.budget.has(Fault::Skew) || cl.skew > 0 || !acquiring || self.faults_over(st)
                {
                    return None;
                }
                let mut s = st.clone();
                s.clients[c as usize].skew = self.ttl + 1;
                s.budget.spend(Fault::Skew);
                Some(Effect::plain(s))
            }
            Action::Rollback(c) => {
                let cl = &st.clients[c as usize];
                if !st.budget.has(Fault::Rollback)
                    || cl.phase != Phase::Commit
                    || cl.process.paused
                    || self.faults_over(st)
                {
                    return None;
                }
                let cmd = SqlCommand::Rollback;
                let (reply, db) = apply(&st.db, cl.session, &cmd, st.db_now())?;
                let mut s = st.clone();
                s.db = db;
                s.clients[c as usize].phase = Phase::Done;
                s.budget.spend(Fault::Rollback);
                Some(Effect {
                    state: s,
                    sent: Some((cl.session, cmd, reply)),
                })
            }
            Action::ReaperDies => {
                if !st.budget.has(Fault::ReaperDies) || !self.reaping(st) || self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                s.reaper_dead = true;
                s.budget.spend(Fault::ReaperDies);
                Some(Effect::plain(s))
            }
            Action::Jump => {
                // Only a timed lock reads the server's clock, and a jump while nobody
                // holds changes nothing a waiter reads: the lock is free either way.
                let holding = st.clients.iter().any(|c| c.phase.holding());
                if !st.budget.has(Fault::Jump)
                    || !self.lock.timed()
                    || !holding
                    || self.faults_over(st)
                {
                    return None;
                }
                let mut s = st.clone();
                // Past the TTL, a longer jump expires nothing more.
                s.db_ahead += self.ttl + 1;
                s.budget.spend(Fault::Jump);
                Some(Effect::plain(s))
            }
            // Pause, resume, crash: the kernel's.
            _ => {
                let (f, c) = a.client_fault()?;
                if f.is_fault() && self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                let cl = &mut s.clients[c];
                let (at, session) = (cl.phase, cl.session);
                let (phase, lease) = (&mut cl.phase, &mut cl.lease_until);
                let die = || (*phase, *lease) = (Phase::Crashed, None);
                if !f.strike(&mut cl.process, &mut s.budget, at, die) {
                    return None;
                }
                // The dead process's socket closes; a pooled connection outlives it.
                if f == ClientFault::Crash && self.pool.is_none() {
                    s.db.kill(session);
                }
                if f == ClientFault::Crash {
                    s.queue.retain(|&q| q as usize != c);
                }
                Some(Effect::plain(s))
            }
        }
    }
}
