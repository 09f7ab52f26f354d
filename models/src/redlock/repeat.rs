//! Redlock clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client starts a new attempt, and past the horizon a state is stored with its clock
//! moved back and every instant with it — attempt starts, validities, crashed nodes'
//! downtimes, each node's keys' expiries on its own clock.

use crate::kernel::repeat::Rebase;
use crate::redis::NodeRef;

use super::model::{RedlockModel, RedlockState, RlClient, RlPhase};

impl RedlockModel {
    /// Whether a finished client asks for the lock again: where clients start over,
    /// once the faults are over (before, each locks once, as in every other check).
    pub(super) fn starts_over(&self, s: &RedlockState) -> bool {
        crate::kernel::repeat::starts_over(self.repeat, s.now, self.horizon)
    }

    /// A client starting an attempt at `now`, with every attempt it is allowed.
    pub(super) fn fresh(&self, now: u64) -> RlClient {
        RlClient {
            phase: RlPhase::Acquiring,
            t0: now,
            attempts_left: self.attempts.saturating_sub(1),
            ..RlClient::IDLE
        }
    }

    /// The state stored for `s`: `s` itself where clients lock once or before the
    /// floor, otherwise with its clock moved back.
    pub(super) fn rebased(&self, mut s: RedlockState) -> RedlockState {
        if !self.repeat {
            return s;
        }
        // The longest ages read: an attempt's start against its validity, a crashed
        // node's downtime against its restart delay.
        let validity = self.ttl + self.drift;
        let reach = validity.max(self.restart_delay) + 1;
        let Some(r) = Rebase::past(self.horizon.max(reach), s.now) else {
            return s;
        };
        s.now = r.now();
        for c in &mut s.clients {
            c.t0 = match c.phase {
                RlPhase::Acquiring => r.since(c.t0, validity),
                _ => 0,
            };
            c.lease_until = c.lease_until.map(|d| r.deadline(d));
        }
        for n in &mut s.nodes {
            n.down_since = n.down_since.map(|t| r.since(t, self.restart_delay));
            // Keys expired on the node's clock are purged at every step: what is left
            // lies ahead of it, and moves exactly.
            let mut server = (*n.server).clone();
            for e in server.db.keys.values_mut() {
                if let Some(d) = &mut e.deadline {
                    (d.lo, d.hi) = (r.exact(d.lo), r.exact(d.hi));
                }
            }
            n.server = NodeRef::new(server);
        }
        s
    }
}
