//! etcd clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client creates its next key on the session lease it has (a new lease once its own
//! ran out, as `concurrency.NewSession` is called again), and a state is stored with
//! its counters renumbered — revisions, lease ids (which lock keys carry in their
//! names), the guarded counter — and, past the horizon, its leases' deadlines moved
//! back with the clock. Revisions are read in order, for equality and as "the ones
//! before mine", lease ids for equality, and each next one is one past the greatest,
//! so their plain ranks ([`Ranks::dense`]) keep each future.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::kernel::repeat::{Ranks, Rebase};

use super::model::{Client, EtcdLockModel, EtcdLockState, Lock, Phase};
use super::spec::{recipe_key, Lease, LeaseId, COUNTER_KEY, LOCK_PREFIX};

impl EtcdLockModel {
    /// Whether this model's clients can start over: not for a protocol file, whose
    /// requests may carry revisions and keys the renumbering does not know.
    pub fn can_repeat(&self) -> bool {
        !matches!(self.lock, Lock::Described(_))
    }

    /// A client before its first step: what each starts as.
    pub(super) fn fresh(&self) -> Client {
        Client {
            phase: match self.lock {
                Lock::Described(d) if !d.0.lease => Phase::Acquire(0),
                _ => Phase::Grant,
            },
            process: Default::default(),
            lease: None,
            my_rev: 0,
            read: 0,
            lost: false,
            tries: 0,
        }
    }

    /// Whether a finished client asks for the lock again: where clients start over,
    /// once the faults are over (before, each locks once, as in every other check).
    pub(super) fn starts_over(&self, s: &EtcdLockState) -> bool {
        crate::kernel::repeat::starts_over(self.repeat, s.now, self.horizon)
    }

    /// Client `c` of `s` starting over: its next key on its lease while that lives, a
    /// new lease once it is gone.
    pub(super) fn again(&self, s: &EtcdLockState, c: usize) -> Client {
        let cl = &s.clients[c];
        let live = cl.lease.filter(|l| s.etcd.leases.contains_key(l));
        Client {
            phase: if live.is_some() {
                Phase::Create
            } else {
                self.fresh().phase
            },
            process: cl.process,
            lease: live,
            ..self.fresh()
        }
    }

    /// The state stored for `s`: `s` itself where clients lock once, otherwise with its
    /// counters renumbered and, past the horizon, its clock moved back.
    pub(super) fn rebased(&self, mut s: EtcdLockState) -> EtcdLockState {
        if !self.repeat {
            return s;
        }
        let r = Rebase::past(self.horizon, s.now).unwrap_or(Rebase::stay(s.now));
        s.now = r.now();
        // The cluster is shared with the state this one was copied from: it is copied
        // only where the rebase changes it, which most successors' do not.
        let moved = |l: &Lease| (r.deadline(l.deadline.lo), r.deadline(l.deadline.hi));
        if s.etcd
            .leases
            .values()
            .any(|l| moved(l) != (l.deadline.lo, l.deadline.hi))
        {
            for l in Arc::make_mut(&mut s.etcd).leases.values_mut() {
                (l.deadline.lo, l.deadline.hi) = moved(l);
            }
        }
        for c in &mut s.clients {
            // A create revision is its client's from its create to its release.
            if matches!(c.phase, Phase::Grant | Phase::Done) {
                c.my_rev = 0;
            }
        }
        renumber_revisions(&mut s);
        renumber_leases(&mut s);
        if s.etcd
            .keys
            .get(COUNTER_KEY)
            .is_some_and(|kv| kv.value != "0")
        {
            if let Some(kv) = Arc::make_mut(&mut s.etcd).keys.get_mut(COUNTER_KEY) {
                kv.value = "0".into();
            }
        }
        s.commits = 0;
        s.resource
            .forget_counts(s.clients.iter_mut().map(|c| &mut c.read));
        s
    }
}

/// The revisions of `s` — the store's, each key's create and last put, each client's
/// own, the highest the resource saw — renumbered.
fn renumber_revisions(s: &mut EtcdLockState) {
    let keys = s
        .etcd
        .keys
        .values()
        .flat_map(|kv| [kv.create_rev, kv.mod_rev]);
    let ranks = Ranks::dense(
        keys.chain(s.clients.iter().map(|c| c.my_rev))
            .chain([s.etcd.revision, s.resource.max_token]),
        1,
    );
    if !ranks.is_identity() {
        let etcd = Arc::make_mut(&mut s.etcd);
        etcd.revision = ranks.get(etcd.revision);
        for kv in etcd.keys.values_mut() {
            (kv.create_rev, kv.mod_rev) = (ranks.get(kv.create_rev), ranks.get(kv.mod_rev));
        }
    }
    for c in &mut s.clients {
        c.my_rev = ranks.get(c.my_rev);
    }
    s.resource.max_token = ranks.get(s.resource.max_token);
}

/// The lease ids — the cluster's leases, the next id, each client's, each key's, and
/// the ids the recipe's lock keys carry in their names — renumbered.
fn renumber_leases(s: &mut EtcdLockState) {
    let etcd = &s.etcd;
    let ids = etcd
        .leases
        .keys()
        .copied()
        .chain([etcd.next_lease])
        .chain(s.clients.iter().filter_map(|c| c.lease))
        .chain(etcd.keys.values().filter_map(|kv| kv.lease))
        .chain(etcd.keys.keys().filter_map(|k| lease_in(k)));
    let ranks = Ranks::dense(ids.filter_map(|id| u64::try_from(id).ok()), 1);
    if ranks.is_identity() {
        return;
    }
    let rank = |id: LeaseId| {
        u64::try_from(id)
            .ok()
            .and_then(|v| LeaseId::try_from(ranks.get(v)).ok())
            .unwrap_or(id)
    };
    let etcd = Arc::make_mut(&mut s.etcd);
    etcd.leases = std::mem::take(&mut etcd.leases)
        .into_iter()
        .map(|(id, l)| (rank(id), l))
        .collect::<BTreeMap<_, _>>();
    etcd.next_lease = rank(etcd.next_lease);
    etcd.keys = std::mem::take(&mut etcd.keys)
        .into_iter()
        .map(|(k, mut kv)| {
            kv.lease = kv.lease.map(rank);
            let k = match lease_in(&k) {
                Some(l) => recipe_key(rank(l)),
                None => k,
            };
            (k, kv)
        })
        .collect();
    for c in &mut s.clients {
        c.lease = c.lease.map(rank);
    }
}

/// The lease a recipe lock key `lock/<lease in hex>` is named after.
fn lease_in(key: &str) -> Option<LeaseId> {
    LeaseId::from_str_radix(key.strip_prefix(LOCK_PREFIX)?, 16).ok()
}
