//! A client of the etcd model running a user's protocol ([`EtcdProtocol`]): its
//! session lease, its acquire requests one by one, the critical section as every etcd
//! row runs it, its release requests. Who deleted whose key is read off the keyspace
//! before and after each request, so a protocol is judged by what its requests did,
//! not by what it meant.

use crate::check::{happened, pair};
use crate::kernel::LockChecks;
use crate::protocol::by_address::{ByAddress, Named};
use crate::protocol::etcd::{put_revision, EtcdFill, EtcdProtocol, NO_LEASE};
use crate::protocol::outcome::{OnBusy, Outcome};
use crate::registry::Property;
use crate::resource::LOST_UPDATE;

use super::model::{owner, Action, Effect, EtcdLockModel, EtcdLockState, Lock, Phase};
use super::spec::{apply, EtcdCommand, EtcdReply, EtcdState};

/// A described protocol as the model holds it (see [`ByAddress`]).
pub type DescribedRef = ByAddress<EtcdProtocol>;

impl Named for EtcdProtocol {
    fn name(&self) -> &str {
        &self.name
    }
}

/// Whether the request deleted a key another client wrote: present before with
/// another's value, gone (or a new incarnation) after.
fn deleted_foreign(before: &EtcdState, after: &EtcdState, me: &str, clients: usize) -> bool {
    before.keys.iter().any(|(k, kv)| {
        kv.value != me
            && (0..clients).any(|c| owner(c) == kv.value)
            && after
                .keys
                .get(k)
                .is_none_or(|now| now.create_rev != kv.create_rev)
    })
}

impl EtcdLockModel {
    /// Client `c`'s next step outside the critical section, under protocol `p`.
    pub(super) fn described_step(
        &self,
        p: &'static EtcdProtocol,
        st: &EtcdLockState,
        c: usize,
    ) -> Option<Effect> {
        let cl = &st.clients[c];
        let mut s = st.clone();
        let name = owner(c);
        let key = self.my_key(cl);
        let fill = EtcdFill {
            key: &key,
            token: &name,
            lease: cl.lease.unwrap_or(NO_LEASE),
            rev: cl.my_rev,
        };
        let (cmd, release) = match cl.phase {
            Phase::Grant => (EtcdCommand::Grant { ttl: self.ttl }, None),
            Phase::Acquire(k) => (p.acquire_request(k, &fill)?, None),
            Phase::Release => (p.release_request(0, &fill)?, Some(0)),
            Phase::Unlock(k) => (p.release_request(k, &fill)?, Some(k)),
            _ => return None,
        };
        let (reply, etcd) = apply(&s.etcd, &cmd, s.now);
        if deleted_foreign(&s.etcd, &etcd, &name, s.clients.len()) {
            s.foreign_release.get_or_insert(c as u8);
        }
        s.etcd = etcd.into();
        let next = match (cl.phase, release) {
            (Phase::Grant, _) => match &reply {
                EtcdReply::Granted { lease, .. } => {
                    s.clients[c].lease = Some(*lease);
                    Phase::Acquire(0)
                }
                _ => return None,
            },
            (Phase::Acquire(k), _) => {
                if let Some(rev) = put_revision(&reply) {
                    s.clients[c].my_rev = rev;
                }
                match p.acquired(k, &reply) {
                    Outcome::Next => Phase::Acquire(k + 1),
                    Outcome::Granted => Phase::Critical(0),
                    _ => self.refused(p, &mut s, c),
                }
            }
            (_, Some(k)) => match p.released(k, &reply) {
                Outcome::Next => Phase::Unlock(k + 1),
                _ => Phase::Done,
            },
            _ => return None,
        };
        s.clients[c].phase = next;
        Some(Effect {
            state: s,
            sent: Some((cmd, reply)),
        })
    }

    /// Where a refused client goes: a new try (on a new session lease if its own is
    /// gone), its release (`on_busy = "release"`), or home.
    fn refused(&self, p: &EtcdProtocol, s: &mut EtcdLockState, c: usize) -> Phase {
        let cl = &mut s.clients[c];
        match p.on_busy {
            OnBusy::GiveUp => Phase::Done,
            OnBusy::Release => Phase::Release,
            OnBusy::Retry => {
                if let Some(max) = p.attempts {
                    cl.tries = cl.tries.saturating_add(1);
                    if cl.tries >= max {
                        cl.lost = true;
                        return Phase::Done;
                    }
                }
                cl.my_rev = 0;
                let lease_gone = cl.lease.is_some_and(|l| !s.etcd.leases.contains_key(&l));
                if lease_gone {
                    Phase::Grant
                } else {
                    Phase::Acquire(0)
                }
            }
        }
    }
}

impl EtcdLockModel {
    /// Why a described protocol broke `property` on `path`, from the faults that struck
    /// and the state they left (the catalog rows' reasons name their own protocols).
    pub(super) fn described_why(
        &self,
        property: Property,
        path: &[(Option<Action>, EtcdLockState)],
    ) -> String {
        let struck = |f: fn(&Action) -> bool| happened(path, f);
        let last = path.last().map(|(_, s)| s);
        let pair = pair(&last.map(|s| self.in_critical(s)).unwrap_or_default());
        let foreign = last.and_then(|s| s.foreign_release);
        match property {
            // Judged on histories only: no model states them.
            Property::LockLinearizability | Property::ResourceLinearizability | Property::Fencing => {
                format!("{property} is judged on histories, not by this model.")
            }
            Property::MutualExclusion if foreign.is_some() => format!(
                "c{} deleted a key another client held, so the lock looked free: {pair} are inside together.",
                foreign.unwrap_or(0)
            ),
            Property::MutualExclusion if struck(|a| matches!(a, Action::Partition(_))) => format!(
                "The holder was cut off from the cluster: its keep-alives never arrived, its lease expired and etcd deleted its key while it worked on: {pair} are inside together."
            ),
            Property::MutualExclusion if struck(|a| matches!(a, Action::Pause(_))) => format!(
                "The holder paused past its lease TTL; its keep-alives stopped with it, the lease expired and etcd deleted its key: {pair} are inside together."
            ),
            Property::MutualExclusion => format!(
                "Each acquire was granted: nothing in the protocol's requests keeps a second client out while the first holds the lock: {pair} are inside together."
            ),
            Property::NoForeignRelease => {
                let how = if struck(|a| matches!(a, Action::Drop(_))) {
                    " when it sent a release again after losing its reply"
                } else {
                    ""
                };
                format!(
                    "c{} deleted a key another client had written{how}: a request that names the key without checking whose it is.",
                    foreign.unwrap_or(0)
                )
            }
            Property::Liveness => {
                let what = last
                    .and_then(|s| self.orphan(s))
                    .unwrap_or_else(|| "a key".to_string());
                let lease = match self.lock {
                    Lock::Described(d) if !d.0.lease => " (it is on no lease that could expire)",
                    _ => "",
                };
                format!("Nothing will delete {what}{lease} while a client waits for it.")
            }
            Property::ResourceSafety => LOST_UPDATE.to_string(),
            Property::Reentrancy => "A re-entry was refused.".to_string(),
        }
    }
}
