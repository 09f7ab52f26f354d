//! How SQL statements and replies read in stories, notes and recorded histories:
//! statements as a reader would type them, replies as a client library shows them.

use super::spec::{SqlCommand, SqlReply};

/// A statement as a reader would type it.
pub fn statement_text(cmd: &SqlCommand) -> String {
    match cmd {
        SqlCommand::Insert { name, owner } => {
            format!("INSERT INTO locks (name, owner, created) VALUES ('{name}', '{owner}', NOW())")
        }
        SqlCommand::DeleteByName { name } => format!("DELETE FROM locks WHERE name = '{name}'"),
        SqlCommand::DeleteById { id } => format!("DELETE FROM locks WHERE id = {id}"),
        SqlCommand::Reap { ttl } => format!("DELETE FROM locks WHERE created < NOW() - {ttl}"),
        SqlCommand::LeaseAcquire {
            name,
            owner,
            now,
            ttl,
        } => {
            let t = now.map_or("NOW()".to_string(), |t| t.to_string());
            format!(
                "UPDATE locks SET owner = '{owner}', last_lock_time = {t} WHERE name = '{name}' AND last_lock_time < {t} - {ttl}"
            )
        }
        SqlCommand::LeaseCheck { name, now, ttl } => {
            let t = now.map_or("NOW()".to_string(), |t| t.to_string());
            format!("SELECT COUNT(*) FROM locks WHERE name = '{name}' AND last_lock_time < {t} - {ttl}")
        }
        SqlCommand::LeaseTake { name, owner, now } => {
            let t = now.map_or("NOW()".to_string(), |t| t.to_string());
            format!("UPDATE locks SET owner = '{owner}', last_lock_time = {t} WHERE name = '{name}'")
        }
        SqlCommand::LeaseRelease { name, owner } => format!(
            "UPDATE locks SET owner = '', last_lock_time = MIN WHERE name = '{name}' AND owner = '{owner}'"
        ),
        SqlCommand::GetLock { name } => format!("SELECT GET_LOCK('{name}', 0)"),
        SqlCommand::ReleaseLock { name } => format!("SELECT RELEASE_LOCK('{name}')"),
        SqlCommand::Begin => "BEGIN".to_string(),
        SqlCommand::BeginReadUncommitted => {
            "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED; BEGIN".to_string()
        }
        SqlCommand::Commit => "COMMIT".to_string(),
        SqlCommand::Rollback => "ROLLBACK".to_string(),
        SqlCommand::SelectForUpdate { name, nowait } => {
            let nowait = if *nowait { " NOWAIT" } else { "" };
            format!("SELECT * FROM locks WHERE name = '{name}' FOR UPDATE{nowait}")
        }
        SqlCommand::ReadCounter => "SELECT n FROM counter".to_string(),
        SqlCommand::WriteCounter { value } => format!("UPDATE counter SET n = {value}"),
        SqlCommand::AdvisoryLock { key } => format!("SELECT pg_advisory_lock({key})"),
        SqlCommand::AdvisoryXactLock { key } => format!("SELECT pg_advisory_xact_lock({key})"),
        SqlCommand::TryAdvisoryLock { key, xact: false } => {
            format!("SELECT pg_try_advisory_lock({key})")
        }
        SqlCommand::TryAdvisoryLock { key, xact: true } => {
            format!("SELECT pg_try_advisory_xact_lock({key})")
        }
        SqlCommand::AdvisoryUnlock { key } => format!("SELECT pg_advisory_unlock({key})"),
        SqlCommand::NextVal => "SELECT nextval('fence')".to_string(),
    }
}

/// A reply as a client library would show it.
pub fn reply_text(reply: &SqlReply) -> String {
    match reply {
        SqlReply::Ok => "OK".to_string(),
        SqlReply::Rows(n) => format!("{n} row(s)"),
        SqlReply::Inserted(id) => format!("OK, id {id}"),
        SqlReply::DuplicateKey => "ERROR duplicate key".to_string(),
        SqlReply::Int(n) => n.to_string(),
        SqlReply::Null => "NULL".to_string(),
        SqlReply::Bool(b) => if *b { "t" } else { "f" }.to_string(),
        SqlReply::ConnectionLost => "ERROR connection lost".to_string(),
        SqlReply::LockNotAvailable => "ERROR lock not available (NOWAIT)".to_string(),
    }
}
