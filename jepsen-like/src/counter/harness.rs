//! The harness's own counter: a key on a Redis server that no fault reaches. With
//! fencing it is the storage of Kleppmann's fix: every read and write carries the
//! holder's token, and a token older than the newest one it has seen is refused — on
//! reads too, or a stale holder could still write over a newer holder's
//! read-modify-write.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::Script;

use locklab_implementations::BoxFuture;

use super::{Counter, Outcome};

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

    /// Reads the counter (`None`: never written); fenced when a token is given.
    async fn read_counter(&self, token: Option<u64>) -> Outcome<Option<i64>> {
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
    async fn write_counter(&self, value: i64, token: Option<u64>) -> Outcome<()> {
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

impl Counter for RedisCounter {
    fn key(&self) -> &str {
        &self.key
    }

    fn read(&self, token: Option<u64>) -> BoxFuture<'_, Outcome<Option<i64>>> {
        Box::pin(self.read_counter(token))
    }

    fn write<'a>(
        &'a self,
        value: i64,
        token: Option<u64>,
        _lock_key: &'a str,
    ) -> BoxFuture<'a, Outcome<()>> {
        Box::pin(self.write_counter(value, token))
    }
}
