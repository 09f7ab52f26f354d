//! What every action but a client's step does: time, replication, Sentinel's
//! failover, a split brain and its heal, and the kernel's pause, resume and crash.

use super::*;

impl RedisLockModel {
    /// The state `a` leads to from `st`, if it is enabled; what it sent goes to `log`.
    pub(super) fn successor(
        &self,
        st: &RedisLockState,
        a: &Action,
        log: &mut Log,
    ) -> Option<RedisLockState> {
        // Cloned only once an action is enabled: most of the ~20 actions a state offers
        // are not, and a clone copies every node's keyspace.
        match *a {
            Action::Step(c) => self.step(st, c as usize, log),
            Action::Renew(c) => self.renew(st, c as usize, log),
            Action::Tick => {
                if !self.may_tick(st) {
                    return None;
                }
                let mut s = st.clone();
                s.now += 1;
                self.settle(&mut s);
                Some(s)
            }
            Action::Replicate(r) => {
                if st.nodes[r as usize].stream.is_empty() {
                    return None;
                }
                let mut s = st.clone();
                s.nodes[r as usize].replicate_one();
                self.settle(&mut s);
                Some(s)
            }
            Action::Failover(r) => {
                let (r, m) = (r as usize, st.master as usize);
                if !st.budget.has(Fault::Failover)
                    || r == m
                    || !st.nodes[r].up
                    || self.faults_over(st)
                    || !self.sentinels_see_master_down(st)
                {
                    return None;
                }
                let mut s = st.clone();
                topology::promote(&mut s.nodes, m, r);
                s.master = r as u8;
                s.epoch += 1;
                s.offset = 0;
                s.budget.spend(Fault::Failover);
                self.settle(&mut s);
                Some(s)
            }
            Action::Split(c) => {
                let cl = &st.clients[c as usize];
                if !st.budget.has(Fault::Split)
                    || st.split.is_some()
                    || st.nodes.len() < 2
                    || matches!(cl.phase, Phase::Done | Phase::Crashed)
                    || self.faults_over(st)
                {
                    return None;
                }
                let mut s = st.clone();
                s.split = Some(Split {
                    node: s.master,
                    client: c,
                    since: s.now,
                });
                s.budget.spend(Fault::Split);
                Some(s)
            }
            Action::Heal(c) => {
                let x = st.split.filter(|x| x.client == c)?;
                let mut s = st.clone();
                let (old, m) = (x.node as usize, s.master as usize);
                let master = s.nodes[m];
                for (i, n) in s.nodes.iter_mut().enumerate() {
                    if i != m && (n.up || i == old) {
                        n.resync_from(master);
                        n.rejoin();
                    }
                }
                s.split = None;
                self.settle(&mut s);
                Some(s)
            }
            // Pause, resume, crash: the kernel's.
            _ => {
                let (f, c) = a.client_fault()?;
                let at = st.clients[c].phase;
                if !f.enabled(&st.clients[c].process, &st.budget, at)
                    || (f.is_fault() && self.faults_over(st))
                {
                    return None;
                }
                let mut s = st.clone();
                let Client {
                    phase,
                    process,
                    lease_until,
                    ..
                } = &mut s.clients[c];
                f.strike(process, &mut s.budget, at, || {
                    (*phase, *lease_until) = (Phase::Crashed, Lease::NONE);
                });
                Some(s)
            }
        }
    }

    /// Whether Sentinel may promote a replica: in a model with a split brain, only once
    /// the master has been cut off from it for `down_after` ticks (the row has no kill:
    /// Sentinel fails over only a master it cannot reach); elsewhere at any instant (the
    /// master crashed).
    fn sentinels_see_master_down(&self, s: &RedisLockState) -> bool {
        if !self.faults.has(Fault::Split) {
            return true;
        }
        s.split
            .is_some_and(|x| x.node == s.master && s.now >= x.since + self.down_after)
    }
}
