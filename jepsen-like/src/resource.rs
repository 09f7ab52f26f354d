//! The protected resource, read and written inside the critical section: a counter on
//! a Redis server of its own that no fault reaches ([`RedisCounter`]), or, where the
//! scenario's work must commit with the lock, the `counter` row of the lock's own
//! database written in the locking transaction ([`SqlCounter`]).
//!
//! With fencing the Redis counter is the storage of Kleppmann's fix: every read and
//! write carries the holder's token, and a token older than the newest one it has seen
//! is refused — on reads too, or a stale holder could still write over a newer holder's
//! read-modify-write.

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::sql::Session;
use locklab_models::sql::spec::{SqlCommand, SqlReply};
use redis::aio::MultiplexedConnection;
use redis::Script;

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
}

impl Resource {
    /// Connects to the Redis resource server at `addr` for the counter `key`.
    pub async fn connect(addr: &str, key: &str) -> redis::RedisResult<Self> {
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

    /// The counter's key in the history.
    pub fn key(&self) -> &str {
        match self {
            Resource::Redis(r) => r.key(),
            Resource::Sql(_) => SqlCounter::KEY,
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
        }
    }

    /// Writes the counter; fenced when a token is given.
    pub async fn write(&self, value: i64, token: Option<u64>) -> Outcome<()> {
        match self {
            Resource::Redis(r) => r.write(value, token).await,
            Resource::Sql(r) => r.write(value).await,
        }
    }
}

/// The `counter` row (`id = 1`) of a lock's database, read and written through one
/// client's session: inside the transaction that holds the lock when the lock is a
/// transaction, so the work commits with the release or rolls back with a lost session.
#[derive(Clone, Debug)]
pub struct SqlCounter {
    session: Arc<Session>,
}

impl SqlCounter {
    /// The counter's key in the history (the table).
    pub const KEY: &'static str = "counter";

    /// The counter through `session`.
    pub fn new(session: Arc<Session>) -> Self {
        SqlCounter { session }
    }

    async fn read(&self) -> Outcome<Option<i64>> {
        match self.session.exec(SqlCommand::ReadCounter).await {
            Ok(SqlReply::Int(v)) => Outcome::Ok(Some(v)),
            Ok(other) => Outcome::Unknown(format!("unexpected reply {other:?}")),
            Err(e) if self.session.is_gone() => Outcome::RolledBack(e.to_string()),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    async fn write(&self, value: i64) -> Outcome<()> {
        // The spec's counter is small (the models count a few sections); a run's is too.
        let Ok(value) = u8::try_from(value) else {
            return Outcome::Unknown(format!("{value} is beyond the spec's counter"));
        };
        match self.session.exec(SqlCommand::WriteCounter { value }).await {
            Ok(SqlReply::Rows(1)) => Outcome::Ok(()),
            Ok(other) => Outcome::Unknown(format!("unexpected reply {other:?}")),
            Err(e) if self.session.is_gone() => Outcome::RolledBack(e.to_string()),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }
}

/// The counter on the harness's Redis server, as one client sees it.
#[derive(Clone)]
pub struct RedisCounter {
    conn: MultiplexedConnection,
    key: String,
    fence_key: String,
}

const FENCED_READ: &str = r#"
local t = tonumber(ARGV[1])
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if t < seen then return {0, false} end
redis.call('SET', KEYS[2], t)
return {1, redis.call('GET', KEYS[1])}
"#;

const FENCED_WRITE: &str = r#"
local t = tonumber(ARGV[1])
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if t < seen then return 0 end
redis.call('SET', KEYS[2], t)
redis.call('SET', KEYS[1], ARGV[2])
return 1
"#;

/// A resource server answers in well under this; past it the outcome is unknown.
const TIMEOUT: Duration = Duration::from_secs(2);

impl RedisCounter {
    /// Connects to the resource server at `addr` for the counter `key`.
    pub async fn connect(addr: &str, key: &str) -> redis::RedisResult<Self> {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let conn = client.get_multiplexed_async_connection().await?;
        Ok(RedisCounter {
            conn,
            key: key.to_string(),
            fence_key: format!("{key}:fence"),
        })
    }

    /// The counter key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Reads the counter (`None`: never written); fenced when a token is given.
    pub async fn read(&self, token: Option<u64>) -> Outcome<Option<i64>> {
        let mut conn = self.conn.clone();
        let fut = async {
            match token {
                None => redis::cmd("GET")
                    .arg(&self.key)
                    .query_async::<Option<i64>>(&mut conn)
                    .await
                    .map(|v| (true, v)),
                Some(t) => Script::new(FENCED_READ)
                    .key(&self.key)
                    .key(&self.fence_key)
                    .arg(t)
                    .invoke_async::<(i64, Option<i64>)>(&mut conn)
                    .await
                    .map(|(ok, v)| (ok == 1, v)),
            }
        };
        match tokio::time::timeout(TIMEOUT, fut).await {
            Ok(Ok((true, v))) => Outcome::Ok(v),
            Ok(Ok((false, _))) => Outcome::Refused,
            Ok(Err(e)) => Outcome::Unknown(e.to_string()),
            Err(_) => Outcome::Unknown(format!("no answer within {TIMEOUT:?}")),
        }
    }

    /// Writes the counter; fenced when a token is given.
    pub async fn write(&self, value: i64, token: Option<u64>) -> Outcome<()> {
        let mut conn = self.conn.clone();
        let fut = async {
            match token {
                None => redis::cmd("SET")
                    .arg(&self.key)
                    .arg(value)
                    .query_async::<()>(&mut conn)
                    .await
                    .map(|()| true),
                Some(t) => Script::new(FENCED_WRITE)
                    .key(&self.key)
                    .key(&self.fence_key)
                    .arg(t)
                    .arg(value)
                    .invoke_async::<i64>(&mut conn)
                    .await
                    .map(|ok| ok == 1),
            }
        };
        match tokio::time::timeout(TIMEOUT, fut).await {
            Ok(Ok(true)) => Outcome::Ok(()),
            Ok(Ok(false)) => Outcome::Refused,
            Ok(Err(e)) => Outcome::Unknown(e.to_string()),
            Err(_) => Outcome::Unknown(format!("no answer within {TIMEOUT:?}")),
        }
    }
}
