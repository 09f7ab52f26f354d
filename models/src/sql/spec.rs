//! What a SQL server (MariaDB/MySQL or PostgreSQL) does with the statements the SQL lock
//! rows send: a `locks` table with a unique `name` (rows carry an auto-increment id, an
//! owner, a creation time and a lease time), sessions with their transactions, row locks
//! taken by `SELECT … FOR UPDATE`, MySQL's named session locks (`GET_LOCK`), PostgreSQL's
//! advisory locks with their hold counts (session and transaction level), a `counter`
//! row the work may update inside a transaction, and a sequence (`nextval`).
//!
//! Statements are atomic and take effect at the server's clock `now`. A statement that
//! would wait for a lock another session holds does not run ([`apply`] answers `None`):
//! the model simply does not take that step until the lock is free, which is what a
//! blocked session looks like from outside.

use std::collections::BTreeMap;

// How a request and a reply read lives in `text.rs`; other crates name it here.
pub use super::text::{reply_text, statement_text};

/// The name every row locks.
pub const LOCK_NAME: &str = "lock";

/// The advisory lock key every PostgreSQL row locks.
pub const ADVISORY_KEY: i64 = 1;

/// A row of the `locks` table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockRow {
    /// `AUTO_INCREMENT` id (usable as a fencing token: it only grows).
    pub id: u64,
    /// Who wrote it (`owner` / `holder` column; empty when released).
    pub owner: String,
    /// `created`, server time of the `INSERT`.
    pub created: u64,
    /// `last_lock_time` of a lease row; `None` is the minimum timestamp a release writes.
    pub last_lock_time: Option<u64>,
}

impl LockRow {
    /// `last_lock_time < t - ttl`: the lease is free (released rows hold the minimum
    /// timestamp) or ran out by clock `t`. The compare-and-set `UPDATE` and the
    /// check-then-set `SELECT` ask the same question.
    fn lease_expired(&self, ttl: u64, t: u64) -> bool {
        self.last_lock_time.is_none_or(|last| last + ttl < t)
    }

    /// `SET owner = ?, last_lock_time = t`.
    fn take_lease(&mut self, owner: &str, t: u64) {
        self.owner = owner.to_string();
        self.last_lock_time = Some(t);
    }
}

/// An open transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tx {
    /// The `counter` value this transaction wrote, visible only to it until `COMMIT`
    /// (and to a transaction that reads uncommitted data).
    pub counter: Option<u8>,
    /// `READ UNCOMMITTED`: its reads see other transactions' uncommitted writes.
    pub dirty_reads: bool,
}

/// A connection's server side.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Session {
    /// Not yet killed or closed.
    pub alive: bool,
    /// The transaction `BEGIN` opened, if any (otherwise every statement autocommits).
    pub tx: Option<Tx>,
}

/// Who holds an advisory lock, and how many times at each level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Advisory {
    /// The holding session.
    pub session: u8,
    /// `pg_advisory_lock` holds not yet unlocked.
    pub count: u8,
    /// `pg_advisory_xact_lock` holds, freed when the transaction ends.
    pub xact: u8,
}

/// The server's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlState {
    /// The `locks` table by its unique `name`.
    pub rows: BTreeMap<String, LockRow>,
    /// The next `AUTO_INCREMENT` id.
    pub next_id: u64,
    /// Every session, by id.
    pub sessions: Vec<Session>,
    /// `GET_LOCK` locks: name → (session, hold count).
    pub named: BTreeMap<String, (u8, u8)>,
    /// Advisory locks by key.
    pub advisory: BTreeMap<i64, Advisory>,
    /// Row locks by row name → the session whose transaction holds them.
    pub row_locks: BTreeMap<String, u8>,
    /// The committed value of the `counter` row.
    pub counter: u8,
    /// The last value `nextval('fence')` returned.
    pub sequence: i64,
}

/// A statement. Run histories carry them as `command` events (serialized in kebab
/// case: `{"get-lock":{"name":"lock"}}`); [`statement_text`] prints one as SQL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum SqlCommand {
    /// `INSERT INTO locks (name, owner, created) VALUES (?, ?, NOW())`.
    Insert {
        /// Row name (unique key).
        name: String,
        /// Owner column.
        owner: String,
    },
    /// `DELETE FROM locks WHERE name = ?`.
    DeleteByName {
        /// Row name.
        name: String,
    },
    /// `DELETE FROM locks WHERE id = ?`.
    DeleteById {
        /// Row id.
        id: u64,
    },
    /// The reaper: `DELETE FROM locks WHERE created < NOW() - ttl`.
    Reap {
        /// Age after which a row is taken for abandoned.
        ttl: u64,
    },
    /// `UPDATE locks SET owner = ?, last_lock_time = T WHERE name = ? AND last_lock_time < T - ttl`,
    /// with `T` the client's `now` or the server's `NOW()`.
    LeaseAcquire {
        /// Row name.
        name: String,
        /// New owner.
        owner: String,
        /// The client's clock, or `None` for `NOW()`.
        now: Option<u64>,
        /// Lease length.
        ttl: u64,
    },
    /// `SELECT COUNT(*) FROM locks WHERE name = ? AND last_lock_time < T - ttl`: the
    /// check half of a check-then-set takeover.
    LeaseCheck {
        /// Row name.
        name: String,
        /// The client's clock, or `None` for `NOW()`.
        now: Option<u64>,
        /// Lease length.
        ttl: u64,
    },
    /// `UPDATE locks SET owner = ?, last_lock_time = T WHERE name = ?`: the set half,
    /// with no condition on what the check saw (no compare-and-set).
    LeaseTake {
        /// Row name.
        name: String,
        /// New owner.
        owner: String,
        /// The client's clock, or `None` for `NOW()`.
        now: Option<u64>,
    },
    /// `UPDATE locks SET owner = '', last_lock_time = <min> WHERE name = ? AND owner = ?`.
    LeaseRelease {
        /// Row name.
        name: String,
        /// Expected owner.
        owner: String,
    },
    /// `SELECT GET_LOCK(?, 0)`.
    GetLock {
        /// Lock name.
        name: String,
    },
    /// `SELECT RELEASE_LOCK(?)`.
    ReleaseLock {
        /// Lock name.
        name: String,
    },
    /// `BEGIN`.
    Begin,
    /// MySQL's `SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED` and `BEGIN`: the
    /// transaction's reads see other transactions' uncommitted writes. (PostgreSQL
    /// accepts the level and runs it as `READ COMMITTED`; no row sends it there.)
    BeginReadUncommitted,
    /// `COMMIT`.
    Commit,
    /// `ROLLBACK`.
    Rollback,
    /// `SELECT * FROM locks WHERE name = ? FOR UPDATE` (waits while another transaction
    /// holds the row).
    SelectForUpdate {
        /// Row name.
        name: String,
        /// `FOR UPDATE NOWAIT`: answer [`SqlReply::LockNotAvailable`] instead of waiting.
        nowait: bool,
    },
    /// `SELECT n FROM counter`: its own transaction's write, else the committed value
    /// (else, under `READ UNCOMMITTED`, another transaction's uncommitted write).
    ReadCounter,
    /// `UPDATE counter SET n = ?` (waits while another open transaction has written the
    /// row: the row lock its `UPDATE` took is held to its end).
    WriteCounter {
        /// New value.
        value: u8,
    },
    /// `SELECT pg_advisory_lock(?)` (waits while another session holds the key).
    AdvisoryLock {
        /// The advisory key (the rows use `ADVISORY_KEY`); its holder may take it again,
        /// each hold counted until as many unlocks.
        key: i64,
    },
    /// `SELECT pg_advisory_xact_lock(?)` (waits; freed at the transaction's end).
    AdvisoryXactLock {
        /// The advisory key; outside a transaction the hold ends with the statement.
        key: i64,
    },
    /// `SELECT pg_try_advisory_lock(?)` / `pg_try_advisory_xact_lock(?)`: the
    /// waiting statements' non-waiting twins (`t` granted, `f` busy).
    TryAdvisoryLock {
        /// The advisory key; only another session's hold makes it busy.
        key: i64,
        /// The transaction-level lock.
        xact: bool,
    },
    /// `SELECT pg_advisory_unlock(?)`.
    AdvisoryUnlock {
        /// The advisory key; drops one session-level hold of the caller's (none held: `f`).
        key: i64,
    },
    /// `SELECT nextval('fence')`.
    NextVal,
}

/// What the server answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum SqlReply {
    /// A statement without a result (`BEGIN`, `COMMIT`, a void function).
    Ok,
    /// Rows affected or returned.
    Rows(u64),
    /// An `INSERT` succeeded with this id.
    Inserted(u64),
    /// `ER_DUP_ENTRY` / `unique_violation`.
    DuplicateKey,
    /// A single integer.
    Int(i64),
    /// SQL `NULL`.
    Null,
    /// A boolean.
    Bool(bool),
    /// The connection is gone (the session was killed or closed).
    ConnectionLost,
    /// `NOWAIT` found the row locked by another transaction.
    LockNotAvailable,
}

impl SqlState {
    /// A server with `sessions` open connections and no rows.
    pub fn new(sessions: usize) -> SqlState {
        SqlState {
            next_id: 1,
            sessions: vec![
                Session {
                    alive: true,
                    tx: None
                };
                sessions
            ],
            ..SqlState::default()
        }
    }

    /// Whether `row` would be deleted by the reaper at `now`.
    pub fn reapable(row: &LockRow, now: u64, ttl: u64) -> bool {
        row.created + ttl < now
    }

    /// Kills a session (`KILL CONNECTION`, `pg_terminate_backend`, or the client's
    /// socket closing): its transaction rolls back and every lock it held is freed.
    /// Committed rows stay.
    pub fn kill(&mut self, session: u8) {
        if let Some(s) = self.sessions.get_mut(session as usize) {
            s.alive = false;
            s.tx = None;
        }
        self.row_locks.retain(|_, s| *s != session);
        self.named.retain(|_, (s, _)| *s != session);
        self.advisory.retain(|_, a| a.session != session);
    }

    /// Another session whose open transaction has written the `counter` row (and so
    /// holds its row lock).
    fn counter_writer(&self, session: u8) -> Option<usize> {
        self.sessions.iter().enumerate().position(|(i, x)| {
            i != session as usize && x.alive && x.tx.as_ref().is_some_and(|t| t.counter.is_some())
        })
    }

    fn end_tx(&mut self, session: u8, commit: bool) {
        let Some(tx) = self
            .sessions
            .get_mut(session as usize)
            .and_then(|s| s.tx.take())
        else {
            return;
        };
        if commit {
            if let Some(v) = tx.counter {
                self.counter = v;
            }
        }
        self.row_locks.retain(|_, s| *s != session);
        for a in self.advisory.values_mut() {
            if a.session == session {
                a.xact = 0;
            }
        }
        self.advisory.retain(|_, a| a.count + a.xact > 0);
    }
}

/// The reply and next state when `session` sends `cmd` at server time `now`, or `None`
/// while the statement waits for a lock another session holds.
pub fn apply(
    state: &SqlState,
    session: u8,
    cmd: &SqlCommand,
    now: u64,
) -> Option<(SqlReply, SqlState)> {
    let mut s = state.clone();
    let alive = s.sessions.get(session as usize).is_some_and(|x| x.alive);
    if !alive {
        return Some((SqlReply::ConnectionLost, s));
    }
    let reply = match cmd {
        SqlCommand::Insert { .. }
        | SqlCommand::DeleteByName { .. }
        | SqlCommand::DeleteById { .. }
        | SqlCommand::Reap { .. }
        | SqlCommand::LeaseAcquire { .. }
        | SqlCommand::LeaseCheck { .. }
        | SqlCommand::LeaseTake { .. }
        | SqlCommand::LeaseRelease { .. } => s.on_rows(cmd, now),
        SqlCommand::GetLock { .. } | SqlCommand::ReleaseLock { .. } => s.on_named(session, cmd),
        SqlCommand::Begin
        | SqlCommand::BeginReadUncommitted
        | SqlCommand::Commit
        | SqlCommand::Rollback
        | SqlCommand::SelectForUpdate { .. }
        | SqlCommand::ReadCounter
        | SqlCommand::WriteCounter { .. } => s.on_tx(session, cmd)?,
        SqlCommand::AdvisoryLock { .. }
        | SqlCommand::AdvisoryXactLock { .. }
        | SqlCommand::TryAdvisoryLock { .. }
        | SqlCommand::AdvisoryUnlock { .. }
        | SqlCommand::NextVal => s.on_advisory(session, cmd)?,
    };
    Some((reply, s))
}

impl SqlState {
    /// The lock table's statements: a row inserted, deleted or reaped; a lease taken,
    /// checked or given back by an `UPDATE`.
    fn on_rows(&mut self, cmd: &SqlCommand, now: u64) -> SqlReply {
        match cmd {
            SqlCommand::Insert { name, owner } => {
                if self.rows.contains_key(name) {
                    return SqlReply::DuplicateKey;
                }
                let id = self.next_id;
                self.next_id += 1;
                self.rows.insert(
                    name.clone(),
                    LockRow {
                        id,
                        owner: owner.clone(),
                        created: now,
                        last_lock_time: None,
                    },
                );
                SqlReply::Inserted(id)
            }
            SqlCommand::DeleteByName { name } => {
                SqlReply::Rows(u64::from(self.rows.remove(name).is_some()))
            }
            SqlCommand::DeleteById { id } => {
                let before = self.rows.len();
                self.rows.retain(|_, r| r.id != *id);
                SqlReply::Rows((before - self.rows.len()) as u64)
            }
            SqlCommand::Reap { ttl } => {
                let before = self.rows.len();
                self.rows.retain(|_, r| !SqlState::reapable(r, now, *ttl));
                SqlReply::Rows((before - self.rows.len()) as u64)
            }
            SqlCommand::LeaseAcquire {
                name,
                owner,
                now: client_now,
                ttl,
            } => {
                let t = client_now.unwrap_or(now);
                match self.rows.get_mut(name) {
                    Some(r) if r.lease_expired(*ttl, t) => {
                        r.take_lease(owner, t);
                        SqlReply::Rows(1)
                    }
                    _ => SqlReply::Rows(0),
                }
            }
            SqlCommand::LeaseCheck {
                name,
                now: client_now,
                ttl,
            } => {
                let t = client_now.unwrap_or(now);
                let expired = self
                    .rows
                    .get(name)
                    .is_some_and(|r| r.lease_expired(*ttl, t));
                SqlReply::Rows(u64::from(expired))
            }
            SqlCommand::LeaseTake {
                name,
                owner,
                now: client_now,
            } => match self.rows.get_mut(name) {
                Some(r) => {
                    r.take_lease(owner, client_now.unwrap_or(now));
                    SqlReply::Rows(1)
                }
                None => SqlReply::Rows(0),
            },
            SqlCommand::LeaseRelease { name, owner } => match self.rows.get_mut(name) {
                Some(r) if r.owner == *owner => {
                    r.owner.clear();
                    r.last_lock_time = None;
                    SqlReply::Rows(1)
                }
                _ => SqlReply::Rows(0),
            },
            _ => unreachable!("apply gives on_rows the lock table's statements alone"),
        }
    }

    /// MySQL's named locks, `GET_LOCK` and `RELEASE_LOCK`, counted per session.
    fn on_named(&mut self, session: u8, cmd: &SqlCommand) -> SqlReply {
        match cmd {
            SqlCommand::GetLock { name } => match self.named.get_mut(name) {
                Some((holder, _)) if *holder != session => SqlReply::Int(0),
                Some((_, count)) => {
                    *count += 1;
                    SqlReply::Int(1)
                }
                None => {
                    self.named.insert(name.clone(), (session, 1));
                    SqlReply::Int(1)
                }
            },
            SqlCommand::ReleaseLock { name } => match self.named.get_mut(name) {
                None => SqlReply::Null,
                Some((holder, _)) if *holder != session => SqlReply::Int(0),
                Some((_, count)) => {
                    *count -= 1;
                    if *count == 0 {
                        self.named.remove(name);
                    }
                    SqlReply::Int(1)
                }
            },
            _ => unreachable!("apply gives on_named the named locks' statements alone"),
        }
    }

    /// Transactions, the row lock of `SELECT … FOR UPDATE` and the protected counter;
    /// `None` while the statement waits for a lock another session holds.
    fn on_tx(&mut self, session: u8, cmd: &SqlCommand) -> Option<SqlReply> {
        let in_tx = self.sessions[session as usize].tx.is_some();
        Some(match cmd {
            SqlCommand::Begin => {
                // Like both servers, a BEGIN inside a transaction commits it first (MySQL)
                // or warns (PostgreSQL); the rows never nest transactions.
                self.sessions[session as usize].tx = Some(Tx::default());
                SqlReply::Ok
            }
            SqlCommand::BeginReadUncommitted => {
                self.sessions[session as usize].tx = Some(Tx {
                    counter: None,
                    dirty_reads: true,
                });
                SqlReply::Ok
            }
            SqlCommand::Commit | SqlCommand::Rollback => {
                self.end_tx(session, *cmd == SqlCommand::Commit);
                SqlReply::Ok
            }
            SqlCommand::SelectForUpdate { name, nowait } => {
                match self.row_locks.get(name) {
                    Some(holder) if *holder != session && *nowait => {
                        return Some(SqlReply::LockNotAvailable);
                    }
                    Some(holder) if *holder != session => return None,
                    _ => {}
                }
                // Under autocommit the row lock ends with the statement.
                if in_tx {
                    self.row_locks.insert(name.clone(), session);
                }
                SqlReply::Rows(u64::from(self.rows.contains_key(name)))
            }
            SqlCommand::ReadCounter => {
                let tx = self.sessions[session as usize].tx.as_ref();
                let own = tx.and_then(|t| t.counter);
                let dirty = tx
                    .filter(|t| t.dirty_reads)
                    .and_then(|_| self.counter_writer(session))
                    .and_then(|w| self.sessions[w].tx.as_ref())
                    .and_then(|t| t.counter);
                SqlReply::Int(i64::from(own.or(dirty).unwrap_or(self.counter)))
            }
            SqlCommand::WriteCounter { .. } if self.counter_writer(session).is_some() => {
                return None
            }
            SqlCommand::WriteCounter { value } => {
                match self.sessions[session as usize].tx.as_mut() {
                    Some(tx) => tx.counter = Some(*value),
                    None => self.counter = *value,
                }
                SqlReply::Rows(1)
            }
            _ => unreachable!("apply gives on_tx the transactions' statements alone"),
        })
    }

    /// PostgreSQL's advisory locks (session-level counted, transaction-level until the
    /// transaction ends) and the fencing sequence; `None` while a lock waits.
    fn on_advisory(&mut self, session: u8, cmd: &SqlCommand) -> Option<SqlReply> {
        let in_tx = self.sessions[session as usize].tx.is_some();
        Some(match cmd {
            SqlCommand::AdvisoryLock { key } | SqlCommand::AdvisoryXactLock { key } => {
                let xact = matches!(cmd, SqlCommand::AdvisoryXactLock { .. });
                self.advisory_lock(session, *key, xact, in_tx)?
            }
            SqlCommand::TryAdvisoryLock { key, xact } => {
                let busy = self.advisory.get(key).is_some_and(|a| a.session != session);
                if busy {
                    return Some(SqlReply::Bool(false));
                }
                self.advisory_lock(session, *key, *xact, in_tx)?;
                SqlReply::Bool(true)
            }
            SqlCommand::AdvisoryUnlock { key } => match self.advisory.get_mut(key) {
                Some(a) if a.session == session && a.count > 0 => {
                    a.count -= 1;
                    self.advisory.retain(|_, a| a.count + a.xact > 0);
                    SqlReply::Bool(true)
                }
                // PostgreSQL: "WARNING: you don't own a lock of type ExclusiveLock".
                _ => SqlReply::Bool(false),
            },
            SqlCommand::NextVal => {
                self.sequence += 1;
                SqlReply::Int(self.sequence)
            }
            _ => unreachable!("apply gives on_advisory the advisory locks' statements alone"),
        })
    }

    /// `pg_advisory_lock` (or `_xact_lock` when `xact`) on `key`; `None` while another
    /// session holds it.
    fn advisory_lock(
        &mut self,
        session: u8,
        key: i64,
        xact: bool,
        in_tx: bool,
    ) -> Option<SqlReply> {
        let a = self.advisory.entry(key).or_insert(Advisory {
            session,
            count: 0,
            xact: 0,
        });
        if a.session != session {
            return None;
        }
        // Outside a transaction an xact lock lasts only for the statement.
        match (xact, in_tx) {
            (false, _) => a.count += 1,
            (true, true) => a.xact += 1,
            (true, false) => {}
        }
        self.advisory.retain(|_, a| a.count + a.xact > 0);
        Some(SqlReply::Ok)
    }
}

impl SqlCommand {
    /// What it touches, as a history key: the lock's name, an advisory key as a
    /// number, `counter` for the counter row; none for a transaction statement, the
    /// reaper (every old row) or the sequence.
    pub fn key(&self) -> Option<String> {
        match self {
            SqlCommand::Insert { name, .. }
            | SqlCommand::DeleteByName { name }
            | SqlCommand::LeaseAcquire { name, .. }
            | SqlCommand::LeaseCheck { name, .. }
            | SqlCommand::LeaseTake { name, .. }
            | SqlCommand::LeaseRelease { name, .. }
            | SqlCommand::GetLock { name }
            | SqlCommand::ReleaseLock { name }
            | SqlCommand::SelectForUpdate { name, .. } => Some(name.clone()),
            SqlCommand::AdvisoryLock { key }
            | SqlCommand::AdvisoryXactLock { key }
            | SqlCommand::TryAdvisoryLock { key, .. }
            | SqlCommand::AdvisoryUnlock { key } => Some(key.to_string()),
            SqlCommand::ReadCounter | SqlCommand::WriteCounter { .. } => Some("counter".into()),
            SqlCommand::DeleteById { .. }
            | SqlCommand::Reap { .. }
            | SqlCommand::Begin
            | SqlCommand::BeginReadUncommitted
            | SqlCommand::Commit
            | SqlCommand::Rollback
            | SqlCommand::NextVal => None,
        }
    }
}

#[cfg(test)]
mod tests;
