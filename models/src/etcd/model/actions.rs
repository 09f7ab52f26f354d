//! What every action but a client's step does: keep-alives, time and lease expiry, a
//! lost reply, a revoked lease, a leader change, and the kernel's pause, resume, crash,
//! partition and heal.

use super::*;

impl EtcdLockModel {
    /// What `a` does to `st`, with the request it sent, if it is enabled.
    pub(in crate::etcd) fn effect(&self, st: &EtcdLockState, a: &Action) -> Option<Effect> {
        // Cloned only once an action is enabled: most actions a state offers are not.
        let request = |s: EtcdLockState, cmd: EtcdCommand| {
            let (reply, etcd) = apply(&s.etcd, &cmd, s.now);
            Some(Effect {
                state: EtcdLockState {
                    etcd: etcd.into(),
                    ..s
                },
                sent: Some((cmd, reply)),
            })
        };
        match *a {
            Action::Step(c) => self.step(st, c as usize),
            Action::KeepAlive(c) => {
                let cl = &st.clients[c as usize];
                let lease = cl.lease?;
                let due = Self::lease_deadline(st, cl).is_some_and(|d| time::due(st.now, d));
                if !self.timed() || !Self::keeps_alive(cl) || !due {
                    return None;
                }
                request(st.clone(), EtcdCommand::KeepAlive { lease })
            }
            Action::Tick => {
                if !self.may_tick(st) {
                    return None;
                }
                let mut s = st.clone();
                s.now += 1;
                if s.etcd.any_due(s.now) {
                    Arc::make_mut(&mut s.etcd).expire_due(s.now);
                }
                Some(Effect::plain(s))
            }
            Action::Drop(c) => {
                let cl = &st.clients[c as usize];
                let releasing = matches!(cl.phase, Phase::Release | Phase::Unlock(_));
                if !st.budget.has(Fault::Drop)
                    || !releasing
                    || !self.may_step(cl)
                    || self.faults_over(st)
                {
                    return None;
                }
                let mut e = self.step(st, c as usize)?;
                // A described client sends the step whose reply it lost again.
                e.state.clients[c as usize].phase = match self.lock {
                    Lock::Described(_) => cl.phase,
                    _ => Phase::Retry,
                };
                e.state.budget.spend(Fault::Drop);
                Some(e)
            }
            Action::Revoke(c) => {
                let cl = &st.clients[c as usize];
                let lease = cl.lease?;
                if !st.budget.has(Fault::Revoke) || cl.phase != Phase::Wait || self.faults_over(st)
                {
                    return None;
                }
                let mut s = st.clone();
                s.budget.spend(Fault::Revoke);
                request(s, EtcdCommand::Revoke { lease })
            }
            Action::Failover => {
                if !st.budget.has(Fault::Failover)
                    || st.etcd.leases.is_empty()
                    || self.faults_over(st)
                {
                    return None;
                }
                let mut s = st.clone();
                Arc::make_mut(&mut s.etcd).restart_leases(s.now);
                s.budget.spend(Fault::Failover);
                Some(Effect::plain(s))
            }
            // Pause, resume, crash, partition, heal: the kernel's.
            _ => {
                let (f, c) = a.client_fault()?;
                if f.is_fault() && self.faults_over(st) {
                    return None;
                }
                let mut s = st.clone();
                let Client { phase, process, .. } = &mut s.clients[c];
                let at = *phase;
                f.strike(process, &mut s.budget, at, || *phase = Phase::Crashed)
                    .then_some(Effect::plain(s))
            }
        }
    }
}
