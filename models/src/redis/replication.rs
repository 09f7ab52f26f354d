//! Master–replica replication with Sentinel failover: the master appends every write to
//! one stream per replica, a replica applies its stream in order (at the instant the
//! master executed each command, so it reaches the same state), `WAIT n` counts the
//! replicas that have applied a given offset, and a failover promotes a replica with
//! whatever it has applied — writes still in flight are lost.

use crate::redis::spec::{apply, RedisCommand, RedisReply, RedisState, Value};

use super::keys::LOCK_KEY;

/// One Redis server.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node {
    /// Its keyspace.
    pub db: RedisState,
    /// Which client created the lock key now stored here (ghost state: no real server
    /// knows it; it is how the model sees a foreign release).
    pub creator: Option<u8>,
    /// Writes of the master not yet applied here: `(command, instant, client)`.
    pub stream: Vec<(RedisCommand, u64, u8)>,
    /// Still part of the topology (a demoted old master is not).
    pub up: bool,
}

impl Node {
    /// An empty, running server.
    pub fn new() -> Self {
        Node {
            db: RedisState::default(),
            creator: None,
            stream: Vec::new(),
            up: true,
        }
    }

    /// Runs `cmd` from `client` at `now`. Returns the reply and whether it was a foreign
    /// release: a release command of `client` changing a lock created by someone else.
    pub fn exec(
        &mut self,
        client: u8,
        cmd: &RedisCommand,
        now: u64,
        release: bool,
    ) -> (RedisReply, bool) {
        let before = self.db.live(LOCK_KEY, now).map(|e| e.value.clone());
        let creator = if before.is_some() { self.creator } else { None };
        let (reply, db) = apply(&self.db, cmd, now);
        self.db = db;
        let after = self.db.live(LOCK_KEY, now).map(|e| e.value.clone());
        let changed = before != after;
        self.creator = match &after {
            None => None,
            Some(_) if changed && !release => Some(client),
            Some(_) => creator,
        };
        let foreign = release && changed && creator.is_some_and(|c| c != client);
        (reply, foreign)
    }

    /// Drops expired keys, unless replicated writes are pending (a replica deletes only
    /// what its master tells it to).
    pub fn purge(&mut self, now: u64) {
        if self.stream.is_empty() {
            self.db.purge_expired(now);
            if self.db.live(LOCK_KEY, now).is_none() {
                self.creator = None;
            }
        }
    }

    /// The first instant from which [`Node::purge`] changes the node, if any: when a key
    /// expires, or at once for a creator left without its key; never while replicated
    /// writes are pending.
    pub fn purge_due(&self) -> Option<u64> {
        if !self.stream.is_empty() {
            return None;
        }
        let orphan = self.creator.is_some() && !self.db.keys.contains_key(LOCK_KEY);
        let first = self.db.first_expiry();
        if orphan {
            Some(0)
        } else {
            first
        }
    }

    /// Whether [`Node::purge`] would change anything (so a shared node is copied only
    /// when it must be).
    pub fn would_purge(&self, now: u64) -> bool {
        self.purge_due().is_some_and(|t| now >= t)
    }

    /// Applies the oldest pending write, if any.
    pub fn replicate_one(&mut self) -> bool {
        if self.stream.is_empty() {
            return false;
        }
        let (cmd, at, client) = self.stream.remove(0);
        self.exec(client, &cmd, at, false);
        true
    }

    /// Queues a write of the master's, run at `at` by `client`, to be applied later.
    pub fn append(&mut self, cmd: &RedisCommand, at: u64, client: u8) {
        self.stream.push((cmd.clone(), at, client));
    }

    /// Leaves the topology (a demoted master): what it had not applied is dropped.
    pub fn demote(&mut self) {
        self.up = false;
        self.stream.clear();
    }

    /// The same node with clients renamed: client `c` becomes `to[c]`, in the creator
    /// and in every string value equal to `value(c)`. Models whose clients are
    /// interchangeable use it to compare states up to a renaming of clients. Only for
    /// nodes without pending writes (no model renames a replica).
    pub fn rename_clients(&mut self, to: &[u8], value: fn(u8) -> String) {
        assert!(self.stream.is_empty(), "a replica's stream is not renamed");
        self.creator = self.creator.map(|c| to[c as usize]);
        let names: Vec<String> = (0..to.len() as u8).map(value).collect();
        for entry in self.db.keys.values_mut() {
            if let Value::Str(v) = &mut entry.value {
                if let Some(c) = names.iter().position(|n| n == v) {
                    *v = value(to[c]);
                }
            }
        }
    }

    /// Joins the topology again (an old master healed back as a replica).
    pub fn rejoin(&mut self) {
        self.up = true;
    }

    /// A full sync: becomes a copy of `master`, with nothing pending.
    pub fn resync_from(&mut self, master: &Node) {
        self.db = master.db.clone();
        self.creator = master.creator;
        self.stream.clear();
    }
}

impl Default for Node {
    fn default() -> Self {
        Node::new()
    }
}
