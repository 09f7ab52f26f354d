//! The requests the etcd lock rows send and the replies they get, and the requests
//! built from them (a release, a guarded write): the one vocabulary the models,
//! histories and real clients share.

use super::*;

/// A lease id, as etcd numbers them (the models count from 1).
pub type LeaseId = i64;

/// The recipe's key for a session's lease: `lock/<lease in hex>`, as etcd's
/// `concurrency.Mutex` names it.
pub fn recipe_key(lease: LeaseId) -> String {
    format!("{LOCK_PREFIX}{lease:x}")
}

/// The key etcd's `Lock` RPC makes for lock `name` on `lease`: `<name>/<lease in hex>`
/// (the recipe's key, under the lock's name).
pub fn lock_rpc_key(name: &str, lease: LeaseId) -> String {
    format!("{name}/{lease:x}")
}

/// The release of a key by name: `del key`, or, guarded by the create revision
/// `guard` the releaser's own incarnation of the key had, `txn if create_revision(key) =
/// guard then del key`, which deletes nothing of anyone else's when repeated.
pub fn release_request(key: &str, guard: Option<u64>) -> EtcdCommand {
    let del = EtcdCommand::Delete { key: key.into() };
    match guard {
        Some(rev) => guarded_by(key, rev, del),
        None => del,
    }
}

/// `txn if create_revision(key) = rev then op`: `op` only while `key` is still the
/// incarnation created at revision `rev` (a lock key still its holder's).
pub fn guarded_by(key: &str, rev: u64, op: EtcdCommand) -> EtcdCommand {
    EtcdCommand::Txn {
        compare: vec![Compare::CreateRevision {
            key: key.into(),
            rev,
        }],
        success: vec![op],
        failure: vec![],
    }
}

/// A compare of a `Txn`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Compare {
    /// `create_revision(key) = rev` (0 when the key does not exist).
    CreateRevision {
        /// The key whose create revision is compared; a missing key compares as 0.
        key: String,
        /// The expected create revision.
        rev: u64,
    },
}

/// A request. Run histories carry each one a client sent as a `command` event
/// (serialized in kebab case: `{"get":{"key":"counter"}}`), with its reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum EtcdCommand {
    /// `LeaseGrant`.
    Grant {
        /// Seconds on a real cluster (≥ 1), ticks in the models; keep-alives restart it.
        ttl: u64,
    },
    /// One `LeaseKeepAlive` message.
    KeepAlive {
        /// The lease whose TTL restarts now; an expired or revoked one is `LeaseNotFound`.
        lease: LeaseId,
    },
    /// `LeaseRevoke`: the lease and its keys go.
    Revoke {
        /// The lease to end now, keys and all; one already gone is `LeaseNotFound`.
        lease: LeaseId,
    },
    /// `Range` of one key.
    Get {
        /// The exact key read (no prefix); the reply is empty when it is absent.
        key: String,
    },
    /// `Range` of a prefix, sorted by create revision, the first only (the recipe's
    /// "who owns the lock").
    FirstCreate {
        /// The prefix searched (`lock/`, `<name>/`): the oldest key under it owns the lock.
        prefix: String,
    },
    /// `Range` of a prefix with `max_create_revision`, the last by create revision (the
    /// recipe's "the key I wait for").
    LastCreateBefore {
        /// The prefix searched (`lock/`): the waiter's own key and the keys queued with it.
        prefix: String,
        /// The largest create revision listed.
        max_create_rev: u64,
    },
    /// `Put`.
    Put {
        /// The key written; it keeps its create revision if it exists, else gets the put's.
        key: String,
        /// The data stored: the owner's name for a lock key, the new count for `counter`.
        value: String,
        /// The lease to attach.
        lease: Option<LeaseId>,
    },
    /// `DeleteRange` of one key.
    Delete {
        /// The exact key removed; the reply's `deleted` says whether it existed (0 or 1).
        key: String,
    },
    /// etcd's server-side `Lock` RPC: the server creates `<name>/<lease>` on the lease
    /// if absent and answers once no key created before it is left under `<name>/`.
    /// Its step is the grant: a correct server grants only a key that exists and is
    /// the oldest (a caller whose lease went while it waited is refused).
    Lock {
        /// The lock's name.
        name: String,
        /// The caller's lease.
        lease: LeaseId,
    },
    /// `Unlock`: deletes the key a `Lock` answered with.
    Unlock {
        /// What a `Lock` answered (`<name>/<lease in hex>`); deleting it frees the lock.
        key: String,
    },
    /// `Txn`: if every compare holds, the `success` requests, else the `failure` ones,
    /// atomically at one revision. Only `Get`, `FirstCreate`, `LastCreateBefore`, `Put`
    /// and `Delete` may be inside.
    Txn {
        /// The compares (none: the `success` requests run).
        #[serde(default)]
        compare: Vec<Compare>,
        /// Run when they hold.
        #[serde(default)]
        success: Vec<EtcdCommand>,
        /// Run otherwise (may be left out when read).
        #[serde(default)]
        failure: Vec<EtcdCommand>,
    },
}

/// What etcd answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum EtcdReply {
    /// A lease was granted.
    Granted {
        /// Its id.
        lease: LeaseId,
        /// Its TTL.
        ttl: u64,
    },
    /// A keep-alive restarted the lease's TTL.
    Alive {
        /// The lease's whole TTL as granted, which now counts again from this keep-alive.
        ttl: u64,
    },
    /// `requested lease not found` (expired, revoked or never granted).
    LeaseNotFound,
    /// A revoke succeeded.
    Revoked,
    /// The keys a range found (at most one in the rows' ranges).
    Kvs(Vec<(String, Kv)>),
    /// A put succeeded at this revision.
    Put {
        /// The store revision it was written at: the key's new `mod_rev`, and its
        /// `create_rev` when the key is new.
        revision: u64,
    },
    /// A delete removed `deleted` keys.
    Deleted {
        /// How many.
        deleted: u64,
    },
    /// A `Txn`'s outcome.
    Txn {
        /// Whether the compares held.
        succeeded: bool,
        /// The replies of the requests that ran.
        responses: Vec<EtcdReply>,
    },
    /// A `Lock` was granted: the caller holds the lock as long as this key exists.
    Locked {
        /// `<name>/<lease in hex>`, on the caller's lease: the key to hand to `Unlock`.
        key: String,
    },
    /// An `Unlock` was done.
    Unlocked,
    /// A request etcd refuses (a lease request inside a `Txn`), or a `Lock` that
    /// cannot be granted yet (a key older than its own is still there).
    Invalid,
}
