//! What every action but a client's step does: pings, time and session expiry, the
//! client told of a lost session, a lost reply, the leader's failover, a leap of its
//! clock, and the kernel's pause, resume, crash, partition and heal.

use super::*;

impl ZkLockModel {
    /// What `a` does to `st`, with the request it sent, if it is enabled.
    pub(in crate::zk) fn effect(&self, st: &ZkLockState, a: &Action) -> Option<Effect> {
        // Cloned only once an action is enabled: most actions a state offers are not.
        match *a {
            Action::Step(c) => self.step(st, c as usize),
            Action::Ping(c) => {
                let cl = &st.clients[c as usize];
                let session = cl.session?;
                let due = Self::session_deadline(st, cl).is_some_and(|d| time::due(st.now, d));
                if !self.timed() || !Self::keeps_alive(cl) || !due {
                    return None;
                }
                let cmd = ZkCommand::Ping { session };
                let (reply, zk) = apply(&st.zk, &cmd, st.now);
                let mut s = st.clone();
                s.zk = zk.into();
                Some(Effect {
                    state: s,
                    sent: Some((cmd, reply)),
                })
            }
            Action::Tick => {
                if !self.may_tick(st) {
                    return None;
                }
                let mut s = st.clone();
                s.now += 1;
                if s.zk.any_due(s.now) {
                    Arc::make_mut(&mut s.zk).expire_due(s.now);
                }
                Some(Effect::plain(s))
            }
            Action::Suspend(c) => {
                let told = self.told_after_expiry(st, &st.clients[c as usize]);
                if !self.must_suspend_first(&st.clients[c as usize]) && !told {
                    return None;
                }
                let mut s = st.clone();
                let cl = &mut s.clients[c as usize];
                cl.phase = Phase::Done;
                cl.lost = true;
                Some(Effect::plain(s))
            }
            Action::Drop(c) => {
                let cl = &st.clients[c as usize];
                if !st.budget.has(Fault::Drop)
                    || cl.phase != Phase::Create
                    || !self.may_step(cl)
                    || self.faults_over(st)
                {
                    return None;
                }
                let mut e = self.step(st, c as usize)?;
                let cl = &mut e.state.clients[c as usize];
                cl.phase = if self.recipe.protected {
                    Phase::Find
                } else {
                    Phase::Create
                };
                cl.node = None;
                cl.token = 0;
                e.state.budget.spend(Fault::Drop);
                Some(e)
            }
            Action::Failover => {
                if !st.budget.has(Fault::Failover) || self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                // The new leader knows every session from its log and starts each one's
                // timeout afresh (ZooKeeper's session tracker on a leader's start).
                let now = s.now;
                for session in Arc::make_mut(&mut s.zk).sessions.values_mut() {
                    session.deadline = crate::spec::Window::at(now + session.timeout);
                }
                s.budget.spend(Fault::Failover);
                Some(Effect::plain(s))
            }
            Action::Jump(mask) => {
                let gone = Self::jumped(st, mask);
                // Every mask whose clients have sessions, each set of sessions once.
                if !st.budget.has(Fault::Jump)
                    || self.faults_over(st)
                    || gone.is_empty()
                    || gone.len() != mask.count_ones() as usize
                {
                    return None;
                }
                let mut s = st.clone();
                let zk = Arc::make_mut(&mut s.zk);
                for id in gone {
                    zk.close_session(id);
                }
                s.budget.spend(Fault::Jump);
                Some(Effect::plain(s))
            }
            // Pause, resume, crash, partition, heal: the kernel's.
            _ => {
                let (f, c) = a.client_fault()?;
                if f.is_fault() && self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                let Client {
                    phase,
                    process,
                    session,
                    lost,
                    ..
                } = &mut s.clients[c];
                let at = *phase;
                if !f.strike(process, &mut s.budget, at, || *phase = Phase::Crashed) {
                    return None;
                }
                // Back in touch, a client whose session expired meanwhile is told so.
                let expired = session.is_some_and(|id| !s.zk.sessions.contains_key(&id));
                if f == ClientFault::Heal && expired && phase.running() {
                    (*phase, *lost) = (Phase::Done, true);
                }
                Some(Effect::plain(s))
            }
        }
    }
}
