//! The protected resource: a counter on a Redis server of its own that no fault
//! reaches, read and written inside the critical section. With fencing it is the
//! storage of Kleppmann's fix: every read and write carries the holder's token, and a
//! token older than the newest one it has seen is refused — on reads too, or a stale
//! holder could still write over a newer holder's read-modify-write.

use std::time::Duration;

use locklab_implementations::etcd::EtcdSession;
use locklab_models::etcd::spec::{Compare, EtcdCommand, EtcdReply};
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
}

/// The counter, as one client sees it.
#[derive(Clone)]
pub struct Resource {
    store: Store,
    key: String,
}

#[derive(Clone)]
enum Store {
    /// The harness's own Redis, fenced by the highest token seen.
    Redis {
        conn: MultiplexedConnection,
        fence_key: String,
    },
    /// A key on the etcd cluster that holds the lock, each write guarded by the lock
    /// key's create revision.
    Etcd(Box<EtcdSession>),
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

impl Resource {
    /// Connects to the resource server at `addr` for the counter `key`.
    pub async fn connect(addr: &str, key: &str) -> redis::RedisResult<Self> {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let conn = client.get_multiplexed_async_connection().await?;
        Ok(Resource {
            store: Store::Redis {
                conn,
                fence_key: format!("{key}:fence"),
            },
            key: key.to_string(),
        })
    }

    /// The counter `key` on the etcd cluster `session` talks to: reads are plain gets;
    /// a write with a token is a `Txn` that puts only if the lock key the token came
    /// from still has it as its create revision.
    pub fn etcd(session: EtcdSession, key: &str) -> Self {
        Resource {
            store: Store::Etcd(Box::new(session)),
            key: key.to_string(),
        }
    }

    /// The counter key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Reads the counter (`None`: never written); fenced when a token is given.
    pub async fn read(&self, token: Option<u64>) -> Outcome<Option<i64>> {
        let (conn, fence_key) = match &self.store {
            Store::Redis { conn, fence_key } => (conn, fence_key),
            Store::Etcd(session) => return etcd_read(session, &self.key).await,
        };
        let mut conn = conn.clone();
        let fut = async {
            match token {
                None => redis::cmd("GET")
                    .arg(&self.key)
                    .query_async::<Option<i64>>(&mut conn)
                    .await
                    .map(|v| (true, v)),
                Some(t) => Script::new(FENCED_READ)
                    .key(&self.key)
                    .key(fence_key)
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

    /// Writes the counter; fenced when a token is given. `lock_key` is the key the
    /// token is the create revision of, for a store that guards the write by it.
    pub async fn write(&self, value: i64, token: Option<u64>, lock_key: &str) -> Outcome<()> {
        let (conn, fence_key) = match &self.store {
            Store::Redis { conn, fence_key } => (conn, fence_key),
            Store::Etcd(session) => {
                return etcd_write(session, &self.key, value, token, lock_key).await
            }
        };
        let mut conn = conn.clone();
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
                    .key(fence_key)
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

async fn etcd_read(session: &EtcdSession, key: &str) -> Outcome<Option<i64>> {
    let get = EtcdCommand::Get { key: key.into() };
    match session.exec(get).await {
        Ok(EtcdReply::Kvs(kvs)) => match kvs.first() {
            None => Outcome::Ok(None),
            Some((_, kv)) => match kv.value.parse() {
                Ok(v) => Outcome::Ok(Some(v)),
                Err(_) => Outcome::Unknown(format!("{key} holds {:?}, not a number", kv.value)),
            },
        },
        Ok(other) => Outcome::Unknown(format!("get {key} answered {other:?}")),
        Err(e) => Outcome::Unknown(e.to_string()),
    }
}

async fn etcd_write(
    session: &EtcdSession,
    key: &str,
    value: i64,
    token: Option<u64>,
    lock_key: &str,
) -> Outcome<()> {
    let put = EtcdCommand::Put {
        key: key.into(),
        value: value.to_string(),
        lease: None,
    };
    let cmd = match token {
        None => put,
        Some(rev) => EtcdCommand::Txn {
            compare: vec![Compare::CreateRevision {
                key: lock_key.into(),
                rev,
            }],
            success: vec![put],
            failure: vec![],
        },
    };
    match session.exec(cmd).await {
        Ok(
            EtcdReply::Put { .. }
            | EtcdReply::Txn {
                succeeded: true, ..
            },
        ) => Outcome::Ok(()),
        Ok(EtcdReply::Txn {
            succeeded: false, ..
        }) => Outcome::Refused,
        Ok(other) => Outcome::Unknown(format!("put {key} answered {other:?}")),
        Err(e) => Outcome::Unknown(e.to_string()),
    }
}
