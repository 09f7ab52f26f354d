//! The protected resource, read and written inside the critical section: a counter
//! whose history the checks hold against the counter spec. By default it is a key on a
//! Redis server of the harness's own that no fault reaches ([`harness::RedisCounter`]);
//! a family whose scenario's work must happen on the lock's own servers brings its own
//! (SQL's `counter` row in the locking transaction, etcd's `Txn`-guarded key,
//! ZooKeeper's `multi`-checked node), in its folder.

use locklab_implementations::BoxFuture;

pub mod harness;

/// What one resource operation came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It took effect with this result.
    Ok(T),
    /// The resource refused it (a stale fencing token): nothing changed.
    Refused,
    /// No answer: it may or may not have taken effect.
    Unknown(String),
    /// The transaction it ran in rolled back (the server ended the session): nothing
    /// it did took effect, and nothing more of that transaction can.
    RolledBack(String),
}

/// The counter one client works on.
pub trait Counter: Send + Sync {
    /// The counter's key in the history.
    fn key(&self) -> &str;

    /// Whether its writes take effect only when the lock's release commits them (a
    /// write inside the locking transaction).
    fn commits_with_release(&self) -> bool {
        false
    }

    /// Reads the counter (`None`: never written); fenced when a token is given.
    fn read(&self, token: Option<u64>) -> BoxFuture<'_, Outcome<Option<i64>>>;

    /// Writes the counter; fenced when a token is given. `lock_key` is the key the
    /// token is the create revision of (etcd), or the holder's lock node (ZooKeeper),
    /// for a store that guards the write by it.
    fn write<'a>(
        &'a self,
        value: i64,
        token: Option<u64>,
        lock_key: &'a str,
    ) -> BoxFuture<'a, Outcome<()>>;
}
