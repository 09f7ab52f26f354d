//! The `counter` row of the lock's own database, for SQL locks whose work must commit
//! with the lock's transaction.

use std::sync::Arc;

use locklab_implementations::sql::Session;
use locklab_models::sql::spec::{SqlCommand, SqlReply};

use locklab_implementations::BoxFuture;

use crate::counter::{Counter, Outcome};

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

    async fn read_counter(&self) -> Outcome<Option<i64>> {
        let in_tx = self.session.in_transaction();
        let mut reply = self.session.exec(SqlCommand::ReadCounter).await;
        if reply.is_err() && !in_tx && self.session.is_gone() {
            // Outside a transaction a read changes nothing, so one that finds its
            // session lost since its last statement (the server restarted, the
            // connection was cut) asks again on a new session, as an application does;
            // the first try stays in the history as a lost statement.
            reply = self.session.exec(SqlCommand::ReadCounter).await;
        }
        match reply {
            Ok(SqlReply::Int(v)) => Outcome::Ok(Some(v)),
            Ok(other) => Outcome::Unknown(format!("unexpected reply {other:?}")),
            Err(e) if self.session.is_gone() => Outcome::RolledBack(e.to_string()),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    async fn write_counter(&self, value: i64) -> Outcome<()> {
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

impl Counter for SqlCounter {
    fn key(&self) -> &str {
        Self::KEY
    }

    fn commits_with_release(&self) -> bool {
        true
    }

    fn read(&self, _token: Option<u64>) -> BoxFuture<'_, Outcome<Option<i64>>> {
        Box::pin(self.read_counter())
    }

    fn write<'a>(
        &'a self,
        value: i64,
        _token: Option<u64>,
        _lock_key: &'a str,
    ) -> BoxFuture<'a, Outcome<()>> {
        Box::pin(self.write_counter(value))
    }
}
