//! The protected resource, read and written inside the critical section: a counter on
//! a Redis server of the harness's own that no fault reaches ([`RedisCounter`]), or,
//! where the scenario's work must happen on the lock's own servers, the `counter` row
//! of the lock's database written in the locking transaction ([`SqlCounter`]) or a
//! counter key on the etcd cluster written by a `Txn` guarded by the lock key
//! ([`EtcdCounter`]), or a counter node on the ZooKeeper ensemble written in a `multi`
//! that checks the holder's lock node ([`ZkCounter`]).

mod etcd;
mod redis;
mod sql;
mod zk;

pub use self::etcd::EtcdCounter;
pub use self::redis::RedisCounter;
pub use self::sql::SqlCounter;
pub use self::zk::ZkCounter;

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
#[derive(Clone)]
pub enum Resource {
    /// On the harness's own Redis server.
    Redis(RedisCounter),
    /// In the lock's database, in the lock's transaction.
    Sql(SqlCounter),
    /// On the etcd cluster, each write guarded by the lock key.
    Etcd(EtcdCounter),
    /// On the ZooKeeper ensemble, each write checked against the lock node.
    Zk(ZkCounter),
}

impl Resource {
    /// Connects to the Redis resource server at `addr` for the counter `key`.
    pub async fn connect(addr: &str, key: &str) -> ::redis::RedisResult<Self> {
        RedisCounter::connect(addr, key).await.map(Resource::Redis)
    }

    /// The `counter` row of the lock's database, through the session of `endpoints`
    /// (`None`: they are no SQL session).
    pub fn in_lock_db(endpoints: &crate::custom::Endpoints) -> Option<Self> {
        match endpoints {
            crate::custom::Endpoints::Sql(session) => {
                Some(Resource::Sql(SqlCounter::new(session.clone())))
            }
            _ => None,
        }
    }

    /// The counter `key` on the etcd cluster `session` talks to.
    pub fn etcd(session: locklab_implementations::etcd::EtcdSession, key: &str) -> Self {
        Resource::Etcd(EtcdCounter::new(session, key))
    }

    /// The counter's key in the history.
    pub fn key(&self) -> &str {
        match self {
            Resource::Redis(r) => r.key(),
            Resource::Sql(_) => SqlCounter::KEY,
            Resource::Etcd(r) => r.key(),
            Resource::Zk(r) => r.key(),
        }
    }

    /// Whether its writes take effect only when the lock's release commits them.
    pub fn commits_with_release(&self) -> bool {
        matches!(self, Resource::Sql(_))
    }

    /// Reads the counter (`None`: never written); fenced when a token is given.
    pub async fn read(&self, token: Option<u64>) -> Outcome<Option<i64>> {
        match self {
            Resource::Redis(r) => r.read(token).await,
            Resource::Sql(r) => r.read().await,
            Resource::Etcd(r) => r.read().await,
            Resource::Zk(r) => r.read().await,
        }
    }

    /// Writes the counter; fenced when a token is given. `lock_key` is the key the
    /// token is the create revision of (etcd), or the holder's lock node (ZooKeeper), for
    /// a store that guards the write by it.
    pub async fn write(&self, value: i64, token: Option<u64>, lock_key: &str) -> Outcome<()> {
        match self {
            Resource::Redis(r) => r.write(value, token).await,
            Resource::Sql(r) => r.write(value).await,
            Resource::Etcd(r) => r.write(value, token, lock_key).await,
            Resource::Zk(r) => r.write(value, token, lock_key).await,
        }
    }
}
