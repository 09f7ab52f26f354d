//! What an etcd cluster (v3 API, as one linearizable keyspace) does with the requests
//! the etcd lock rows send: a keyspace with a store revision and each key's create and
//! mod revision, leases with a TTL that keep-alives restart and whose expiry deletes
//! the keys attached to them, and `Txn` with `create_revision` compares.
//!
//! Only what the rows need: etcd's server-side `Lock` RPC is, in 3.4's `v3lock`, the
//! client recipe (`concurrency.Mutex`) run by the server on the caller's lease, so the
//! models run it from these same requests rather than from a command of its own. A
//! real client's `Lock` and `Unlock` calls are requests too ([`EtcdCommand::Lock`]):
//! their step is the grant as a correct server makes it.
//!
//! Time is a [`Window`]: a model steps at one instant, a history at the window between
//! a request's call and its reply. A lease whose deadline falls inside the window may or
//! may not have expired when the request took effect; [`EtcdSpec::step`] lists both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::{expiry, Outcomes, Spec, Window};

// How a request and a reply read lives in `text.rs`; other crates name it here.
pub use super::text::{command_text, reply_text, state_lines};

mod command;
pub use command::{
    guarded_by, lock_rpc_key, recipe_key, release_request, Compare, EtcdCommand, EtcdReply, LeaseId,
};

/// The prefix the `concurrency.Mutex` recipe and the `Lock` RPC create their keys under.
pub const LOCK_PREFIX: &str = "lock/";

/// The one key of the single-key protocol (`etcd-unlock-retry`).
pub const LOCK_KEY: &str = "lock";

/// The key the Txn-guarded work increments.
pub const COUNTER_KEY: &str = "counter";

/// A key's value and metadata.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Kv {
    /// The data of the last put: an owner's name (`c0`) for a recipe's lock key, the count
    /// for `counter`, empty for a key the `Lock` RPC made.
    pub value: String,
    /// The revision that created the key (kept by later puts; a fencing token: it only
    /// grows from one incarnation of a key to the next).
    pub create_rev: u64,
    /// The revision of the last put.
    pub mod_rev: u64,
    /// The lease the key is attached to; its expiry deletes the key.
    pub lease: Option<LeaseId>,
}

/// A granted lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lease {
    /// Its TTL.
    pub ttl: u64,
    /// When it expires unless kept alive: the grant's or last keep-alive's window plus
    /// the TTL (a single instant in models).
    pub deadline: Window,
}

/// The cluster's state, as one linearizable keyspace.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EtcdState {
    /// The store revision: bumped once by every request (or expiry) that writes.
    pub revision: u64,
    /// Every key.
    pub keys: BTreeMap<String, Kv>,
    /// Every lease not yet expired or revoked.
    pub leases: BTreeMap<LeaseId, Lease>,
    /// The id the next grant returns.
    pub next_lease: LeaseId,
}

impl Default for EtcdState {
    /// A new cluster: etcd starts at revision 1.
    fn default() -> Self {
        EtcdState {
            revision: 1,
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: 1,
        }
    }
}

impl EtcdState {
    /// The create revision of `key`, 0 when absent (what a compare sees).
    pub fn create_rev(&self, key: &str) -> u64 {
        self.keys.get(key).map_or(0, |k| k.create_rev)
    }

    /// Expires the lease: it and its keys go, at one new revision if any key went.
    fn drop_lease(&mut self, lease: LeaseId) {
        self.leases.remove(&lease);
        let before = self.keys.len();
        self.keys.retain(|_, kv| kv.lease != Some(lease));
        if self.keys.len() != before {
            self.revision += 1;
        }
    }

    /// Every lease with its deadline.
    fn deadlines(&self) -> Vec<(LeaseId, Window)> {
        self.leases
            .iter()
            .map(|(id, l)| (*id, l.deadline))
            .collect()
    }

    /// Whether a lease's deadline has surely passed at `t`: what [`Self::expire_due`]
    /// would expire, asked without a copy to change.
    pub fn any_due(&self, t: u64) -> bool {
        !expiry::due(self.deadlines(), t).is_empty()
    }

    /// Expires every lease whose deadline has surely passed at `t`; whether any did.
    pub fn expire_due(&mut self, t: u64) -> bool {
        let due = expiry::due(self.deadlines(), t);
        for id in &due {
            self.drop_lease(*id);
        }
        !due.is_empty()
    }

    /// A new leader restarts every lease's TTL from `t` (etcd's lessor `Promote`): a
    /// leader change never shortens a lease, it lengthens it.
    pub fn restart_leases(&mut self, t: u64) {
        for l in self.leases.values_mut() {
            l.deadline = Window::at(t + l.ttl);
        }
    }

    fn range(&self, cmd: &EtcdCommand) -> Option<Vec<(String, Kv)>> {
        let with_prefix = |p: &str| -> Vec<(String, Kv)> {
            self.keys
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, kv)| (k.clone(), kv.clone()))
                .collect()
        };
        Some(match cmd {
            EtcdCommand::Get { key } => self
                .keys
                .get(key)
                .map(|kv| (key.clone(), kv.clone()))
                .into_iter()
                .collect(),
            EtcdCommand::FirstCreate { prefix } => with_prefix(prefix)
                .into_iter()
                .min_by_key(|(_, kv)| kv.create_rev)
                .into_iter()
                .collect(),
            EtcdCommand::LastCreateBefore {
                prefix,
                max_create_rev,
            } => with_prefix(prefix)
                .into_iter()
                .filter(|(_, kv)| kv.create_rev <= *max_create_rev)
                .max_by_key(|(_, kv)| kv.create_rev)
                .into_iter()
                .collect(),
            _ => return None,
        })
    }

    /// A write at revision `rev`; `None` when it is not a write.
    fn write(&mut self, cmd: &EtcdCommand, rev: u64) -> Option<EtcdReply> {
        Some(match cmd {
            EtcdCommand::Put { key, value, lease } => {
                if lease.is_some_and(|l| !self.leases.contains_key(&l)) {
                    return Some(EtcdReply::LeaseNotFound);
                }
                let create_rev = self.keys.get(key).map_or(rev, |k| k.create_rev);
                self.keys.insert(
                    key.clone(),
                    Kv {
                        value: value.clone(),
                        create_rev,
                        mod_rev: rev,
                        lease: *lease,
                    },
                );
                EtcdReply::Put { revision: rev }
            }
            EtcdCommand::Delete { key } => EtcdReply::Deleted {
                deleted: u64::from(self.keys.remove(key).is_some()),
            },
            _ => return None,
        })
    }

    /// Runs `cmd` at an instant `t` after the leases due by then expired.
    fn exec(&mut self, cmd: &EtcdCommand, t: u64) -> EtcdReply {
        match cmd {
            EtcdCommand::Grant { ttl } => {
                let lease = self.next_lease;
                self.next_lease += 1;
                self.leases.insert(
                    lease,
                    Lease {
                        ttl: *ttl,
                        deadline: Window::at(t + ttl),
                    },
                );
                EtcdReply::Granted { lease, ttl: *ttl }
            }
            EtcdCommand::KeepAlive { lease } => match self.leases.get_mut(lease) {
                Some(l) => {
                    l.deadline = Window::at(t + l.ttl);
                    EtcdReply::Alive { ttl: l.ttl }
                }
                None => EtcdReply::LeaseNotFound,
            },
            EtcdCommand::Revoke { lease } => {
                if self.leases.contains_key(lease) {
                    self.drop_lease(*lease);
                    EtcdReply::Revoked
                } else {
                    EtcdReply::LeaseNotFound
                }
            }
            EtcdCommand::Put { .. } | EtcdCommand::Delete { .. } => {
                let rev = self.revision + 1;
                let reply = self.write(cmd, rev).unwrap_or(EtcdReply::Invalid);
                let wrote = matches!(reply, EtcdReply::Put { .. })
                    || matches!(reply, EtcdReply::Deleted { deleted: 1 });
                if wrote {
                    self.revision = rev;
                }
                reply
            }
            EtcdCommand::Txn {
                compare,
                success,
                failure,
            } => self.txn(compare, success, failure),
            EtcdCommand::Lock { name, lease } => self.lock(name, *lease),
            EtcdCommand::Unlock { key } => {
                if self.keys.remove(key).is_some() {
                    self.revision += 1;
                }
                EtcdReply::Unlocked
            }
            _ => self.range(cmd).map_or(EtcdReply::Invalid, EtcdReply::Kvs),
        }
    }

    /// The `Lock` RPC's grant: its key made if absent (on a live lease), granted when
    /// it is the oldest under the lock's name.
    fn lock(&mut self, name: &str, lease: LeaseId) -> EtcdReply {
        if !self.leases.contains_key(&lease) {
            return EtcdReply::LeaseNotFound;
        }
        let key = lock_rpc_key(name, lease);
        if !self.keys.contains_key(&key) {
            let put = EtcdCommand::Put {
                key: key.clone(),
                value: String::new(),
                lease: Some(lease),
            };
            self.revision += 1;
            self.write(&put, self.revision);
        }
        let first = EtcdCommand::FirstCreate {
            prefix: format!("{name}/"),
        };
        match self.range(&first).as_deref() {
            Some([(k, _)]) if *k == key => EtcdReply::Locked { key },
            _ => EtcdReply::Invalid,
        }
    }

    fn txn(
        &mut self,
        compare: &[Compare],
        success: &[EtcdCommand],
        failure: &[EtcdCommand],
    ) -> EtcdReply {
        let succeeded = compare.iter().all(|c| match c {
            Compare::CreateRevision { key, rev } => self.create_rev(key) == *rev,
        });
        let ops = if succeeded { success } else { failure };
        // Every write of a Txn shares one revision; a failed put undoes the whole Txn.
        let rev = self.revision + 1;
        let mut next = self.clone();
        let mut responses = Vec::with_capacity(ops.len());
        let mut wrote = false;
        for op in ops {
            let reply = match next.range(op) {
                Some(kvs) => EtcdReply::Kvs(kvs),
                None => match next.write(op, rev) {
                    Some(EtcdReply::LeaseNotFound) => return EtcdReply::LeaseNotFound,
                    Some(r) => {
                        wrote |=
                            matches!(r, EtcdReply::Put { .. } | EtcdReply::Deleted { deleted: 1 });
                        r
                    }
                    None => return EtcdReply::Invalid,
                },
            };
            responses.push(reply);
        }
        if wrote {
            next.revision = rev;
        }
        *self = next;
        EtcdReply::Txn {
            succeeded,
            responses,
        }
    }
}

/// The reply and next state when `cmd` takes effect at instant `t`: the models' step.
pub fn apply(state: &EtcdState, cmd: &EtcdCommand, t: u64) -> (EtcdReply, EtcdState) {
    let mut s = state.clone();
    s.expire_due(t);
    let reply = s.exec(cmd, t);
    (reply, s)
}

/// The cluster as a [`Spec`]: the history checker's model of etcd's keyspace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EtcdSpec;

impl Spec for EtcdSpec {
    type State = EtcdState;
    type Input = EtcdCommand;
    type Output = EtcdReply;

    fn init(&self) -> EtcdState {
        EtcdState::default()
    }

    /// Leases surely due at the window's start have expired; each lease whose deadline
    /// the window reaches may or may not have.
    fn step(
        &self,
        state: &EtcdState,
        cmd: &EtcdCommand,
        at: Window,
    ) -> Outcomes<EtcdReply, EtcdState> {
        let mut base = state.clone();
        base.expire_due(at.lo);
        let leases = base.deadlines();
        expiry::outcomes(base, leases, at, Self::State::drop_lease, |s, t| {
            s.exec(cmd, t)
        })
    }

    fn describe(cmd: &EtcdCommand, reply: Option<&EtcdReply>) -> String {
        let r = reply.map_or_else(|| "?".to_string(), reply_text);
        format!("{} -> {r}", command_text(cmd))
    }
}

#[cfg(test)]
mod tests;
