//! The stock row (`stock`: `id`, `n`, `version`) and the statements the strategies
//! send, as an application writes them for each server: `?` placeholders on MariaDB,
//! `$n` on PostgreSQL; on Redis, the commands of [`redis_stock`](super::redis_stock).
//! One [`Store`] is one connection (one server session).

use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;
use sqlx::{Connection, Row};

pub use super::redis_stock::{RedisStock, REDIS_STOCK, REDIS_VERSION};
pub use super::store_error::StoreError;

/// The table, made before the buyers start: one product, `stock` units, version 0.
pub fn schema(mariadb: bool, stock: i64) -> String {
    let db = if mariadb {
        format!("USE {}; ", locklab_servers::mariadb::DATABASE)
    } else {
        String::new()
    };
    format!(
        "{db}DROP TABLE IF EXISTS stock; \
         CREATE TABLE stock (id INT PRIMARY KEY, n BIGINT NOT NULL, version BIGINT NOT NULL); \
         INSERT INTO stock (id, n, version) VALUES (1, {stock}, 0)"
    )
}

/// One connection to the stock.
pub enum Store {
    /// A SQL server's `stock` row.
    Sql(SqlStore),
    /// Redis's `stock` keys.
    Redis(RedisStock),
}

impl Store {
    /// Connects to `url` (`mysql://…`, `postgres://…` or `redis://…`).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        if url.starts_with("redis://") {
            Ok(Store::Redis(RedisStock::connect(url).await?))
        } else {
            Ok(Store::Sql(SqlStore::connect(url).await?))
        }
    }

    /// The stock and its version.
    pub async fn read(&mut self) -> Result<(i64, i64), StoreError> {
        match self {
            Store::Sql(s) => Ok(s.read().await?),
            Store::Redis(r) => r.read().await,
        }
    }

    /// Overwrites the stock: the write of read-check-write.
    pub async fn write(&mut self, n: i64) -> Result<(), StoreError> {
        match self {
            Store::Sql(s) => Ok(s.write(n).await?),
            Store::Redis(r) => r.write(n).await,
        }
    }

    /// Takes `units` units in one atomic step if there are that many: whether it did.
    pub async fn decrement(&mut self, units: i64) -> Result<bool, StoreError> {
        match self {
            Store::Sql(s) => Ok(s.decrement(units).await?),
            Store::Redis(r) => r.decrement(units).await,
        }
    }

    /// Writes `n` and `new_version` if nothing was written since the read that saw
    /// version `expect`: whether it did.
    pub async fn cas(&mut self, expect: i64, n: i64, new_version: i64) -> Result<bool, StoreError> {
        match self {
            Store::Sql(s) => Ok(s.cas(expect, n, new_version).await?),
            Store::Redis(r) => r.cas(n, new_version).await,
        }
    }

    /// Read-check-write under a lock: the row lock of `SELECT … FOR UPDATE` on SQL,
    /// locklab's Redis lock (`SET NX PX`, compare-and-delete release) on Redis. Whether
    /// a unit was taken.
    pub async fn buy_locked(&mut self) -> Result<bool, StoreError> {
        match self {
            Store::Sql(s) => Ok(s.buy_for_update().await?),
            Store::Redis(r) => r.buy_locked().await,
        }
    }
}

/// One connection to the stock row's database.
pub enum SqlStore {
    /// MariaDB/MySQL.
    MySql(MySqlConnection),
    /// PostgreSQL.
    Pg(PgConnection),
}

/// The same code on either connection: sqlx's API is one, its connection types two.
macro_rules! either {
    ($self:ident, |$c:ident| $body:block) => {
        match $self {
            SqlStore::MySql($c) => $body,
            SqlStore::Pg($c) => $body,
        }
    };
}

/// Runs the same statement on either connection, with `$1`-style placeholders written
/// as `?` for MariaDB.
macro_rules! on {
    ($self:ident, $sql:expr, |$q:ident| $bind:expr, $run:ident) => {
        match $self {
            SqlStore::MySql(c) => {
                let sql = mysql_placeholders($sql);
                let $q = sqlx::query(&sql);
                $bind.$run(&mut *c).await.map(From::from)
            }
            SqlStore::Pg(c) => {
                let $q = sqlx::query($sql);
                $bind.$run(&mut *c).await.map(From::from)
            }
        }
    };
}

fn mysql_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// What a statement that changes rows reports.
struct Affected(u64);

impl From<sqlx::mysql::MySqlQueryResult> for Affected {
    fn from(r: sqlx::mysql::MySqlQueryResult) -> Self {
        Affected(r.rows_affected())
    }
}

impl From<sqlx::postgres::PgQueryResult> for Affected {
    fn from(r: sqlx::postgres::PgQueryResult) -> Self {
        Affected(r.rows_affected())
    }
}

/// A row read back: `(n, version)`.
struct Stock(i64, i64);

impl From<sqlx::mysql::MySqlRow> for Stock {
    fn from(r: sqlx::mysql::MySqlRow) -> Self {
        Stock(r.get(0), r.get(1))
    }
}

impl From<sqlx::postgres::PgRow> for Stock {
    fn from(r: sqlx::postgres::PgRow) -> Self {
        Stock(r.get(0), r.get(1))
    }
}

impl SqlStore {
    /// Connects to `url` (`mysql://…` or `postgres://…`).
    pub async fn connect(url: &str) -> Result<SqlStore, sqlx::Error> {
        if url.starts_with("mysql://") {
            Ok(SqlStore::MySql(MySqlConnection::connect(url).await?))
        } else {
            Ok(SqlStore::Pg(PgConnection::connect(url).await?))
        }
    }

    /// `SELECT n, version FROM stock WHERE id = 1`.
    pub async fn read(&mut self) -> Result<(i64, i64), sqlx::Error> {
        let s: Result<Stock, _> = on!(
            self,
            "SELECT n, version FROM stock WHERE id = 1",
            |q| q,
            fetch_one
        );
        s.map(|Stock(n, v)| (n, v))
    }

    /// `UPDATE stock SET n = ? WHERE id = 1`: the write of read-check-write.
    pub async fn write(&mut self, n: i64) -> Result<(), sqlx::Error> {
        let a: Result<Affected, _> = on!(
            self,
            "UPDATE stock SET n = $1 WHERE id = 1",
            |q| q.bind(n),
            execute
        );
        a.map(drop)
    }

    /// `UPDATE stock SET n = n - k WHERE id = 1 AND n >= k`: whether the `k` units were
    /// taken.
    pub async fn decrement(&mut self, k: i64) -> Result<bool, sqlx::Error> {
        let a: Result<Affected, _> = on!(
            self,
            // MariaDB's placeholders are positional: the order size is bound twice.
            "UPDATE stock SET n = n - $1 WHERE id = 1 AND n >= $2",
            |q| q.bind(k).bind(k),
            execute
        );
        a.map(|Affected(r)| r == 1)
    }

    /// `UPDATE stock SET n = ?, version = ? WHERE id = 1 AND version = ?`: whether the
    /// version still matched. `new_version` is the version read plus one (a version
    /// counter) or the writer's timestamp (an `updated_at` column used as version).
    pub async fn cas(
        &mut self,
        expect: i64,
        n: i64,
        new_version: i64,
    ) -> Result<bool, sqlx::Error> {
        let a: Result<Affected, _> = on!(
            self,
            "UPDATE stock SET n = $1, version = $2 WHERE id = 1 AND version = $3",
            |q| q.bind(n).bind(new_version).bind(expect),
            execute
        );
        a.map(|Affected(r)| r == 1)
    }

    /// `BEGIN; SELECT n … FOR UPDATE; UPDATE … SET n = n - 1` (when `n > 0`); `COMMIT`:
    /// the row lock held for the whole transaction. Whether a unit was taken.
    pub async fn buy_for_update(&mut self) -> Result<bool, sqlx::Error> {
        const SELECT: &str = "SELECT n, version FROM stock WHERE id = 1 FOR UPDATE";
        const UPDATE: &str = "UPDATE stock SET n = n - 1 WHERE id = 1";
        either!(self, |c| {
            let mut tx = c.begin().await?;
            let n: i64 = sqlx::query(SELECT).fetch_one(&mut *tx).await?.get(0);
            if n > 0 {
                sqlx::query(UPDATE).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(n > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::mysql_placeholders;

    #[test]
    fn numbered_placeholders_become_question_marks() {
        assert_eq!(
            mysql_placeholders("UPDATE t SET n = $1, v = $2 WHERE v = $13"),
            "UPDATE t SET n = ?, v = ? WHERE v = ?"
        );
    }
}
