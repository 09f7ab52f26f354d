//! The SQL spec (`locklab_models::sql::spec`) is the reference a real server is held
//! to: every statement the SQL lock rows send, one at a time over a few sessions of a
//! real MariaDB or PostgreSQL (started here, killed on drop), gets the reply the spec
//! predicts from the statements before it, killed sessions included. The models explore
//! the same `apply`, so a server that answered otherwise would make their verdicts
//! about some other server.
//!
//! Statements go one at a time, so the only freedom is time: a statement took effect
//! somewhere between its send and its reply, and the spec is asked at both ends (its
//! time predicates are monotone, so the ends cover the window). Auto-increment ids and
//! sequence values are the server's to choose as long as they grow (a failed `INSERT`
//! may burn one): those replies are taken as observed when larger than every earlier one.

#![cfg(feature = "backends")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_implementations::sql::Session;
use locklab_models::sql::spec::{apply, statement_text, SqlCommand, SqlReply, SqlState};
use locklab_servers::{MariaDbServer, PostgresServer};

/// How a test server ends a session and tells when it has finished ending it.
trait Killer {
    fn kill(&self, session_id: u64);
    /// Whether the server still lists the session (its locks are freed once it does not).
    fn lists(&self, session_id: u64) -> bool;
}

impl Killer for MariaDbServer {
    fn kill(&self, id: u64) {
        self.kill_connection(id).expect("KILL CONNECTION");
    }
    fn lists(&self, id: u64) -> bool {
        let n = self
            .sql(&format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {id}"
            ))
            .expect("processlist");
        n.trim() != "0"
    }
}

impl Killer for PostgresServer {
    fn kill(&self, id: u64) {
        let pid = u32::try_from(id).expect("pid");
        assert!(self.terminate_backend(pid).expect("pg_terminate_backend"));
    }
    fn lists(&self, id: u64) -> bool {
        let n = self
            .sql(&format!(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = {id}"
            ))
            .expect("pg_stat_activity");
        n.trim() != "0"
    }
}

/// A script's run against one server and the spec side by side.
struct Replay<'a> {
    server: &'a dyn Killer,
    sessions: Vec<Arc<Session>>,
    state: SqlState,
    start: Instant,
    /// The largest id and sequence value the server has handed out.
    last_id: u64,
    last_seq: i64,
    sent: usize,
}

impl<'a> Replay<'a> {
    async fn new(server: &'a dyn Killer, url: &str, sessions: usize) -> Replay<'a> {
        let mut open = Vec::new();
        for _ in 0..sessions {
            let s = Session::connect(url, None)
                .await
                .unwrap_or_else(|e| panic!("connect {url}: {e}"));
            s.ensure_schema().await.expect("schema");
            open.push(Arc::new(s));
        }
        Replay {
            server,
            sessions: open,
            state: SqlState::new(sessions),
            start: Instant::now(),
            last_id: 0,
            last_seq: 0,
            sent: 0,
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// What the spec says `session` gets for `cmd` at `t`. The scripts never send a
    /// statement that would wait for another session's lock.
    fn predict(&self, session: u8, cmd: &SqlCommand, t: u64) -> (SqlReply, SqlState) {
        apply(&self.state, session, cmd, t).unwrap_or_else(|| {
            panic!(
                "script error: {} from session {session} would wait",
                statement_text(cmd)
            )
        })
    }

    /// Sends `cmd` on `session`, asserts the reply is one the spec allows, and moves the
    /// spec's state on as the server did.
    async fn send(&mut self, session: u8, cmd: SqlCommand) -> SqlReply {
        self.sent += 1;
        let before = self.now();
        let conn = self.sessions[usize::from(session)].clone();
        let got = match conn.exec(cmd.clone()).await {
            Ok(r) => r,
            Err(_) if conn.is_gone() => SqlReply::ConnectionLost,
            Err(e) => panic!("{}: {e}", statement_text(&cmd)),
        };
        let after = self.now();
        let candidates = [
            self.predict(session, &cmd, before),
            self.predict(session, &cmd, after),
        ];
        let next = candidates
            .iter()
            .find_map(|(reply, next)| self.matches(reply, &got, next))
            .unwrap_or_else(|| {
                panic!(
                    "statement {} (session {session}): {} answered {got:?}, the spec {:?} \
                     (at {before}..{after} ms)",
                    self.sent,
                    statement_text(&cmd),
                    candidates.iter().map(|c| &c.0).collect::<Vec<_>>()
                )
            });
        self.state = next;
        got
    }

    /// The state after the server answered `got` where the spec predicted `predicted`
    /// (and `next`), or `None` if the answer is not one the spec allows.
    fn matches(
        &mut self,
        predicted: &SqlReply,
        got: &SqlReply,
        next: &SqlState,
    ) -> Option<SqlState> {
        match (predicted, got) {
            (SqlReply::Inserted(p), SqlReply::Inserted(g)) if *g > self.last_id => {
                let mut next = next.clone();
                for row in next.rows.values_mut() {
                    if row.id == *p {
                        row.id = *g;
                    }
                }
                next.next_id = g + 1;
                self.last_id = *g;
                Some(next)
            }
            (SqlReply::Int(_), SqlReply::Int(g)) if next.sequence != self.state.sequence => {
                // nextval: any larger value.
                (*g > self.last_seq).then(|| {
                    self.last_seq = *g;
                    let mut next = next.clone();
                    next.sequence = *g;
                    next
                })
            }
            _ => (predicted == got).then(|| next.clone()),
        }
    }

    /// Closes every session and opens new ones in their places: what the server keeps
    /// (rows, the counter, the sequence) stays, what the old sessions held goes with them.
    async fn reconnect(&mut self, url: &str) {
        let n = self.sessions.len();
        for s in 0..n {
            if !self.state.sessions[s].alive {
                continue;
            }
            let id = self.sessions[s].id();
            self.server.kill(id);
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.server.lists(id) {
                assert!(Instant::now() < deadline, "session {id} still listed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            self.state.kill(u8::try_from(s).expect("few sessions"));
        }
        let fresh = Replay::new(self.server, url, n).await;
        self.sessions = fresh.sessions;
        self.state.sessions = fresh.state.sessions;
    }

    /// Ends `session` on the server (as the nemesis does) and waits until the server has
    /// finished ending it, so its locks are free before the next statement.
    async fn kill(&mut self, session: u8) {
        let id = self.sessions[usize::from(session)].id();
        self.server.kill(id);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.lists(id) {
            assert!(
                Instant::now() < deadline,
                "session {id} still listed 10 s after the kill"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.state.kill(session);
    }
}

fn insert(name: &str, owner: &str) -> SqlCommand {
    SqlCommand::Insert {
        name: name.into(),
        owner: owner.into(),
    }
}

fn delete_by_name(name: &str) -> SqlCommand {
    SqlCommand::DeleteByName { name: name.into() }
}

fn id_of(reply: &SqlReply) -> u64 {
    match reply {
        SqlReply::Inserted(id) => *id,
        other => panic!("not an insert's reply: {other:?}"),
    }
}

/// The unique-key rows: the lock, a second `INSERT` refused, a release by name that
/// removes another owner's row, a release by id that does not.
async fn unique_key(r: &mut Replay<'_>) {
    let first = id_of(&r.send(0, insert("lock", "c0")).await);
    r.send(1, insert("lock", "c1")).await;
    r.send(1, delete_by_name("lock")).await;
    let second = id_of(&r.send(1, insert("lock", "c1")).await);
    r.send(0, SqlCommand::DeleteById { id: first }).await;
    r.send(1, SqlCommand::DeleteById { id: second }).await;
    r.send(0, delete_by_name("lock")).await;
}

/// The reaper takes rows older than its TTL on the server's clock, and only those.
async fn reaper(r: &mut Replay<'_>) {
    r.send(0, insert("old", "c0")).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    r.send(1, insert("young", "c1")).await;
    r.send(2, SqlCommand::Reap { ttl: 450 }).await;
    r.send(0, delete_by_name("young")).await;
}

/// A lease row on the client's clock: taken while free or run out, refused while live,
/// released only by its owner.
async fn lease_client_time(r: &mut Replay<'_>) {
    r.send(0, insert("lease", "")).await;
    let acquire = |owner: &str, now: u64| SqlCommand::LeaseAcquire {
        name: "lease".into(),
        owner: owner.into(),
        now: Some(now),
        ttl: 1_000,
    };
    r.send(0, acquire("c0", 1_000_000)).await;
    r.send(1, acquire("c1", 1_000_500)).await;
    r.send(1, acquire("c1", 1_001_001)).await;
    let release = |owner: &str| SqlCommand::LeaseRelease {
        name: "lease".into(),
        owner: owner.into(),
    };
    r.send(0, release("c0")).await;
    r.send(1, release("c1")).await;
    r.send(0, acquire("c0", 1_001_002)).await;
    // Check-then-set on the client's clock: live at c0's time, run out 1 s later; the
    // take overwrites whatever is there.
    let check = |now: u64| SqlCommand::LeaseCheck {
        name: "lease".into(),
        now: Some(now),
        ttl: 1_000,
    };
    assert_eq!(r.send(1, check(1_001_500)).await, SqlReply::Rows(0));
    assert_eq!(r.send(1, check(1_002_003)).await, SqlReply::Rows(1));
    let take = SqlCommand::LeaseTake {
        name: "lease".into(),
        owner: "c1".into(),
        now: Some(1_001_600),
    };
    assert_eq!(r.send(1, take).await, SqlReply::Rows(1));
}

/// The same row on the database's clock (`NOW()`).
async fn lease_db_time(r: &mut Replay<'_>) {
    r.send(0, insert("dblease", "")).await;
    let acquire = |owner: &str| SqlCommand::LeaseAcquire {
        name: "dblease".into(),
        owner: owner.into(),
        now: None,
        ttl: 500,
    };
    r.send(0, acquire("c0")).await;
    r.send(1, acquire("c1")).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    r.send(1, acquire("c1")).await;
    // Check-then-set (`mysql-lease-no-cas`): both checks see the row free, both takes
    // succeed, and the row is then held.
    r.send(0, insert("nocas", "")).await;
    let check = || SqlCommand::LeaseCheck {
        name: "nocas".into(),
        now: None,
        ttl: 500,
    };
    let take = |owner: &str| SqlCommand::LeaseTake {
        name: "nocas".into(),
        owner: owner.into(),
        now: None,
    };
    assert_eq!(r.send(0, check()).await, SqlReply::Rows(1));
    assert_eq!(r.send(1, check()).await, SqlReply::Rows(1));
    r.send(0, take("c0")).await;
    assert_eq!(r.send(1, take("c1")).await, SqlReply::Rows(1));
    assert_eq!(r.send(2, check()).await, SqlReply::Rows(0));
}

/// `SELECT … FOR UPDATE NOWAIT` in transactions: the row lock excludes, the work inside
/// commits with it, and a killed session's work rolls back with its lock. A refused
/// `NOWAIT` is followed by `ROLLBACK`, as the lock does: PostgreSQL aborts the whole
/// transaction on it, which the spec (whose rows never go on after a refusal) leaves out.
/// Nothing is read before the row lock is taken, as in the lock's own order: MariaDB's
/// `REPEATABLE READ` would otherwise read from a snapshot taken before the holder's commit.
async fn for_update(r: &mut Replay<'_>) {
    let lock = || SqlCommand::SelectForUpdate {
        name: "row".into(),
        nowait: true,
    };
    r.send(2, insert("row", "")).await;
    r.send(0, SqlCommand::Begin).await;
    r.send(0, lock()).await;
    r.send(1, SqlCommand::Begin).await;
    r.send(1, lock()).await;
    r.send(1, SqlCommand::Rollback).await;
    r.send(0, SqlCommand::WriteCounter { value: 9 }).await;
    r.send(0, SqlCommand::Commit).await;
    r.send(1, SqlCommand::Begin).await;
    r.send(1, lock()).await;
    r.send(1, SqlCommand::ReadCounter).await;
    r.send(1, SqlCommand::WriteCounter { value: 3 }).await;
    r.kill(1).await;
    r.send(1, SqlCommand::ReadCounter).await;
    r.send(0, SqlCommand::Begin).await;
    r.send(0, lock()).await;
    r.send(0, SqlCommand::ReadCounter).await;
    r.send(0, SqlCommand::Rollback).await;
}

/// MariaDB's `READ UNCOMMITTED`: a transaction at that level reads another's
/// uncommitted write, and the committed value again once that one rolls back.
/// (PostgreSQL accepts the level and never reads dirty data, so only MariaDB replays it.)
async fn read_uncommitted(r: &mut Replay<'_>) {
    r.send(0, SqlCommand::Begin).await;
    r.send(0, SqlCommand::WriteCounter { value: 7 }).await;
    r.send(1, SqlCommand::BeginReadUncommitted).await;
    r.send(1, SqlCommand::ReadCounter).await;
    r.send(0, SqlCommand::Rollback).await;
    r.send(1, SqlCommand::ReadCounter).await;
    r.send(1, SqlCommand::Commit).await;
}

/// MariaDB's `GET_LOCK`: one session at a time, re-entered by its holder, released only
/// by it, freed when its session is killed.
async fn get_lock(r: &mut Replay<'_>) {
    let get = || SqlCommand::GetLock {
        name: "named".into(),
    };
    let release = || SqlCommand::ReleaseLock {
        name: "named".into(),
    };
    r.send(0, get()).await;
    r.send(1, get()).await;
    r.send(0, get()).await;
    r.send(1, release()).await;
    r.send(0, release()).await;
    r.send(1, get()).await;
    r.send(0, release()).await;
    r.send(1, release()).await;
    r.send(1, release()).await;
    r.send(1, get()).await;
    r.kill(1).await;
    r.send(0, get()).await;
    r.send(0, release()).await;
}

/// PostgreSQL's advisory locks, session and transaction level, and the fencing sequence.
async fn advisory(r: &mut Replay<'_>) {
    let key = 7;
    let lock = SqlCommand::AdvisoryLock { key };
    let try_lock = |xact| SqlCommand::TryAdvisoryLock { key, xact };
    let unlock = SqlCommand::AdvisoryUnlock { key };
    r.send(0, lock.clone()).await;
    r.send(1, try_lock(false)).await;
    r.send(0, lock.clone()).await;
    r.send(0, unlock.clone()).await;
    r.send(1, try_lock(false)).await;
    r.send(0, unlock.clone()).await;
    r.send(0, unlock.clone()).await;
    r.send(1, try_lock(false)).await;
    r.send(0, SqlCommand::NextVal).await;
    r.send(1, SqlCommand::NextVal).await;
    r.kill(1).await;
    r.send(0, try_lock(false)).await;
    r.send(0, unlock.clone()).await;

    r.send(0, SqlCommand::Begin).await;
    r.send(0, SqlCommand::AdvisoryXactLock { key }).await;
    r.send(0, SqlCommand::WriteCounter { value: 5 }).await;
    r.send(2, SqlCommand::Begin).await;
    r.send(2, try_lock(true)).await;
    r.send(0, SqlCommand::Commit).await;
    r.send(2, try_lock(true)).await;
    r.send(2, SqlCommand::ReadCounter).await;
    r.send(2, SqlCommand::WriteCounter { value: 6 }).await;
    r.kill(2).await;
    r.send(0, try_lock(false)).await;
    r.send(0, SqlCommand::ReadCounter).await;
    r.send(0, SqlCommand::NextVal).await;
}

/// Every row on `server` (at `url`): those both dialects share, its own session lock
/// (`session_lock`), then `FOR UPDATE` on fresh sessions.
async fn replay_every_row<'a>(
    server: &'a dyn Killer,
    url: &str,
    session_lock: impl AsyncFnOnce(&mut Replay<'a>),
) {
    let mut r = Replay::new(server, url, 3).await;
    unique_key(&mut r).await;
    reaper(&mut r).await;
    lease_client_time(&mut r).await;
    lease_db_time(&mut r).await;
    session_lock(&mut r).await;
    r.reconnect(url).await;
    for_update(&mut r).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_answers_every_lock_statement_as_the_spec_says() {
    let server = MariaDbServer::start().unwrap_or_else(|e| panic!("cannot start mariadbd: {e}"));
    replay_every_row(&server, &server.url(), async |r: &mut Replay<'_>| {
        read_uncommitted(r).await;
        get_lock(r).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_answers_every_lock_statement_as_the_spec_says() {
    let server = PostgresServer::start().unwrap_or_else(|e| panic!("cannot start postgres: {e}"));
    replay_every_row(&server, &server.url(), advisory).await;
}
