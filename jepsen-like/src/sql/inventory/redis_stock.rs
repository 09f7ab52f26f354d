//! The stock in Redis, as the overselling write-ups keep it: `stock` (units left) and
//! `stock:version` (bumped by every CAS write). Each strategy sends what its write-up
//! sends: `GET`, check, `SET` (read-check-write); one Lua script that checks and
//! `DECR`s (the one-statement form); `WATCH` + `MULTI`/`EXEC` (the optimistic form:
//! `EXEC` aborts when a watched key changed since the read); and read-check-write inside
//! locklab's own Redis lock (the lock-protected form).

use std::time::Duration;

use locklab_implementations::redis::lua::LuaLock;
use locklab_implementations::redis::node::{NodeOptions, RedisNode};
use locklab_implementations::{DistributedLock, Lease};
use redis::aio::MultiplexedConnection;

use super::store_error::StoreError;

/// The key holding the units left.
pub const REDIS_STOCK: &str = "stock";
/// The key holding the version a CAS write bumps.
pub const REDIS_VERSION: &str = "stock:version";
/// The lock the lock-protected form takes.
const LOCK_KEY: &str = "stock:lock";
/// How long a lock-protected buyer waits for the lock, and the lease it asks for.
const LOCK_WAIT: Duration = Duration::from_secs(10);
const LOCK_LEASE: Duration = Duration::from_secs(5);

/// Take one unit if there is one, in one server-side step.
const DECREMENT_IF_ENOUGH: &str = "local n = tonumber(redis.call('GET', KEYS[1]) or '0') \
     local k = tonumber(ARGV[1]) \
     if n >= k then redis.call('DECRBY', KEYS[1], k) return 1 end return 0";

/// One buyer's connection to the stock (its own: `WATCH` belongs to a connection).
pub struct RedisStock {
    conn: MultiplexedConnection,
    lock: LuaLock,
}

impl RedisStock {
    /// Connects to `url` (`redis://host:port/`).
    pub async fn connect(url: &str) -> Result<RedisStock, StoreError> {
        let client = redis::Client::open(url)?;
        let conn = client.get_multiplexed_async_connection().await?;
        let addr = url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .to_string();
        let node = RedisNode::connect(&addr, NodeOptions::default())
            .await
            .map_err(|e| StoreError(format!("connecting the lock to {addr}: {e}")))?;
        Ok(RedisStock {
            conn,
            lock: LuaLock::new(&node, LOCK_KEY),
        })
    }

    /// `WATCH stock stock:version` then `MGET stock stock:version`: the read of every
    /// form (the watch only matters to a later `EXEC`).
    pub async fn read(&mut self) -> Result<(i64, i64), StoreError> {
        redis::cmd("WATCH")
            .arg(REDIS_STOCK)
            .arg(REDIS_VERSION)
            .query_async::<()>(&mut self.conn)
            .await?;
        let (n, v): (Option<i64>, Option<i64>) = redis::cmd("MGET")
            .arg(REDIS_STOCK)
            .arg(REDIS_VERSION)
            .query_async(&mut self.conn)
            .await?;
        Ok((n.unwrap_or(0), v.unwrap_or(0)))
    }

    /// `SET stock n`.
    pub async fn write(&mut self, n: i64) -> Result<(), StoreError> {
        redis::cmd("SET")
            .arg(REDIS_STOCK)
            .arg(n)
            .query_async::<()>(&mut self.conn)
            .await?;
        Ok(())
    }

    /// The check-and-`DECRBY` script: whether the `k` units were taken.
    pub async fn decrement(&mut self, k: i64) -> Result<bool, StoreError> {
        let took: i64 = redis::Script::new(DECREMENT_IF_ENOUGH)
            .key(REDIS_STOCK)
            .arg(k)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(took == 1)
    }

    /// `MULTI`, `SET stock n`, `SET stock:version v`, `EXEC`: whether it ran. `EXEC`
    /// answers nil when a key watched by the read changed since — the version compare
    /// of the SQL form, done by the server for any write, so no version is sent.
    pub async fn cas(&mut self, n: i64, new_version: i64) -> Result<bool, StoreError> {
        let done: Option<((), ())> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(REDIS_STOCK)
            .arg(n)
            .cmd("SET")
            .arg(REDIS_VERSION)
            .arg(new_version)
            .query_async(&mut self.conn)
            .await?;
        Ok(done.is_some())
    }

    /// Read-check-write while holding the Redis lock: whether a unit was taken.
    pub async fn buy_locked(&mut self) -> Result<bool, StoreError> {
        let guard = self
            .lock
            .acquire(LOCK_WAIT, Lease::Fixed(LOCK_LEASE))
            .await
            .map_err(|e| StoreError(format!("acquiring {LOCK_KEY}: {e}")))?;
        let bought = async {
            let (n, _) = self.read().await?;
            if n > 0 {
                self.write(n - 1).await?;
            }
            Ok::<_, StoreError>(n > 0)
        }
        .await;
        let released = guard
            .release()
            .await
            .map_err(|e| StoreError(format!("releasing {LOCK_KEY}: {e}")));
        let bought = bought?;
        released?;
        Ok(bought)
    }
}
