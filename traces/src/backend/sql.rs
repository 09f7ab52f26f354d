//! SQL's history vocabulary (MariaDB and PostgreSQL): the statements of
//! `locklab_models::sql::spec`. A session lock's foreign release shows in the lock
//! operations; the statements prove nothing more.

use locklab_models::sql::spec::{reply_text, statement_text, SqlCommand, SqlReply};

use crate::format::CommandValue;

/// The statement and its answer.
pub fn words(c: &CommandValue) -> Option<(String, Option<String>)> {
    super::read::<SqlCommand, SqlReply>(c, statement_text, reply_text)
}
