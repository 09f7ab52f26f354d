//! The SQL locks on real MariaDB and PostgreSQL servers (started here, killed on drop):
//! each excludes while nothing goes wrong, and each fault of its catalog row does on
//! the real server what the model says it does.

#![cfg(feature = "backends")]

use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::sql::{
    reap, LeaseLock, Session, SessionLock, StatementLog, TxLock, UniqueKeyLock,
};
use locklab_implementations::{Attempt, DistributedLock, Lease, LockError, LockGuard};
use locklab_models::sql::spec::{SqlCommand, SqlReply};
use locklab_servers::{MariaDbServer, PostgresServer, Server};

fn mariadb() -> MariaDbServer {
    MariaDbServer::start().unwrap_or_else(|e| panic!("cannot start mariadbd: {e}"))
}

fn postgres() -> PostgresServer {
    PostgresServer::start().unwrap_or_else(|e| panic!("cannot start postgres: {e}"))
}

async fn session(url: &str, log: Option<&StatementLog>) -> Arc<Session> {
    let s = Session::connect(url, log.cloned())
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    s.ensure_schema().await.expect("schema");
    Arc::new(s)
}

const LEASE: Lease = Lease::Fixed(Duration::from_secs(30));

async fn granted(lock: &dyn DistributedLock) -> LockGuard {
    match lock.try_acquire(LEASE).await.expect("attempt") {
        Attempt::Acquired(g) => g,
        Attempt::Busy { .. } => panic!("{} should be granted", lock.info().protocol),
    }
}

/// Granted once the server has finished ending another session: `pg_terminate_backend`
/// and `KILL CONNECTION` answer when they have signalled the session, which frees its
/// locks a moment later.
async fn granted_after_kill(lock: &dyn DistributedLock) -> LockGuard {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match lock.try_acquire(LEASE).await.expect("attempt") {
            Attempt::Acquired(g) => return g,
            Attempt::Busy { .. } if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Attempt::Busy { .. } => panic!(
                "{} still busy 10 s after the holder's backend was terminated",
                lock.info().protocol
            ),
        }
    }
}

async fn busy(lock: &dyn DistributedLock) -> bool {
    matches!(
        lock.try_acquire(LEASE).await.expect("attempt"),
        Attempt::Busy { .. }
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn unique_key_excludes_and_a_crashed_holders_row_stays() {
    let server = mariadb();
    let log = StatementLog::new();
    let a = UniqueKeyLock::new(session(&server.url(), Some(&log)).await, "k");
    let b = UniqueKeyLock::new(session(&server.url(), Some(&log)).await, "k");
    let g = granted(&a).await;
    assert!(busy(&b).await, "the unique key refuses a second INSERT");
    g.release().await.expect("release");
    let g = granted(&b).await;
    // The crash: the guard is abandoned and the connection closed; the committed row
    // stays and nothing deletes it (mysql-unique-crash: liveness).
    g.abandon();
    drop(b);
    let c = UniqueKeyLock::new(session(&server.url(), None).await, "k");
    let waited = c.acquire(Duration::from_millis(300), LEASE).await;
    assert!(
        matches!(waited, Err(LockError::Timeout { .. })),
        "{waited:?}"
    );
    let statements = log.exchanges();
    assert!(statements.iter().any(|s| matches!(
        (&s.command, &s.reply),
        (SqlCommand::Insert { .. }, Some(SqlReply::DuplicateKey))
    )));
    assert!(statements.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[tokio::test(flavor = "multi_thread")]
async fn reaper_takes_a_slow_holders_row_and_release_by_name_deletes_the_next() {
    let server = mariadb();
    let reaper = session(&server.url(), None).await;
    for by_id in [false, true] {
        let key = if by_id { "by-id" } else { "by-name" };
        let make = |s| {
            if by_id {
                UniqueKeyLock::by_id(s, key)
            } else {
                UniqueKeyLock::new(s, key)
            }
        };
        let a = make(session(&server.url(), None).await);
        let b = make(session(&server.url(), None).await);
        let ga = granted(&a).await;
        // a is slower than the reaper's TTL.
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(
            reap(&reaper, Duration::from_millis(100))
                .await
                .expect("reap"),
            1
        );
        let gb = granted(&b).await;
        if by_id {
            assert!(gb.token() > ga.token(), "ids only grow: a fencing token");
            let r = ga.release().await;
            assert!(matches!(r, Err(LockError::NotHeld { .. })), "{r:?}");
            assert!(busy(&a).await, "b's row survived a's release");
        } else {
            // Foreign release: a's DELETE by name removes b's row.
            ga.release().await.expect("a deletes a row named k");
            assert!(!busy(&a).await, "b's row is gone while b holds");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lease_rows_exclude_with_either_clock() {
    let server = mariadb();
    for db_time in [false, true] {
        let key = if db_time { "lease-db" } else { "lease-client" };
        let a = LeaseLock::new(session(&server.url(), None).await, key, db_time)
            .await
            .expect("lease row");
        let b = LeaseLock::new(session(&server.url(), None).await, key, db_time)
            .await
            .expect("lease row");
        let short = Lease::Fixed(Duration::from_millis(200));
        let Attempt::Acquired(g) = a.try_acquire(short).await.expect("attempt") else {
            panic!("free lease row");
        };
        assert!(matches!(
            b.try_acquire(short).await.expect("attempt"),
            Attempt::Busy { .. }
        ));
        // A holder slower than its lease (mysql-lease-dbtime-pause): the row is taken.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let Attempt::Acquired(gb) = b.try_acquire(short).await.expect("attempt") else {
            panic!("an expired lease is free");
        };
        let r = g.release().await;
        assert!(matches!(r, Err(LockError::NotHeld { .. })), "{r:?}");
        gb.release().await.expect("b releases its own lease");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_session_frees_get_lock_while_its_client_works_on() {
    let server = mariadb();
    let sa = session(&server.url(), None).await;
    let a = SessionLock::new(sa.clone(), "g");
    let b = SessionLock::new(session(&server.url(), None).await, "g");
    let ga = granted(&a).await;
    assert!(busy(&b).await);
    server.kill_connection(sa.id()).expect("KILL CONNECTION");
    // mysql-getlock-conn-kill: a still believes it holds; b is granted.
    let gb = granted_after_kill(&b).await;
    assert!(!ga.is_lost(), "nothing told a");
    assert!(ga.release().await.is_err(), "a's session is gone");
    gb.release().await.expect("b releases");
    // The release found a's session gone: its next acquire opens a new one.
    let killed = sa.id();
    let ga = granted(&a).await;
    assert_ne!(sa.id(), killed, "a new session");
    ga.release().await.expect("a releases on its new session");
}

/// A server killed (`kill -9`) and restarted on its data ends every session, as a
/// kill of each would; a lock's next acquire after the one that found its session
/// gone goes out on a new session, and every statement stays recorded, on either
/// session. A transaction of the lost session is not carried over: its `COMMIT` fails.
#[tokio::test(flavor = "multi_thread")]
async fn after_a_server_restart_the_next_acquire_opens_a_new_session() {
    let mut server = mariadb();
    let log = StatementLog::new();
    let sa = session(&server.url(), Some(&log)).await;
    let a = TxLock::for_update(sa.clone(), "row").await.expect("row");
    let ga = granted(&a).await;
    server.kill();
    server.restart_keeping_data().expect("restarts on its data");
    let wrote = a
        .session()
        .exec(SqlCommand::WriteCounter { value: 3 })
        .await;
    assert!(wrote.is_err() && sa.is_gone(), "{wrote:?}");
    assert!(matches!(ga.release().await, Err(LockError::NotHeld { .. })));
    let before = log.exchanges().len();
    let ga = granted(&a).await;
    assert!(!sa.is_gone());
    a.session()
        .exec(SqlCommand::WriteCounter { value: 4 })
        .await
        .expect("write on the new session");
    ga.release().await.expect("commit on the new session");
    assert_eq!(a_fresh_read(&server.url()).await, SqlReply::Int(4));
    let statements = log.exchanges();
    let lost: Vec<_> = statements[..before]
        .iter()
        .filter(|s| s.reply == Some(SqlReply::ConnectionLost))
        .map(|s| s.command.clone())
        .collect();
    assert_eq!(
        lost,
        [SqlCommand::WriteCounter { value: 3 }, SqlCommand::Commit],
        "{statements:?}"
    );
    let after: Vec<_> = statements[before..].iter().map(|s| s.session).collect();
    assert!(
        after.len() == 4 && after.iter().all(|s| *s == Some(sa.id())),
        "BEGIN, FOR UPDATE, the write and COMMIT on the new session: {statements:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn work_in_the_for_update_transaction_rolls_back_with_a_killed_session() {
    let server = mariadb();
    let sa = session(&server.url(), None).await;
    let a = TxLock::for_update(sa.clone(), "row").await.expect("row");
    let b = TxLock::for_update(session(&server.url(), None).await, "row")
        .await
        .expect("row");
    let ga = granted(&a).await;
    assert!(busy(&b).await, "FOR UPDATE NOWAIT on a locked row");
    let wrote = a
        .session()
        .exec(SqlCommand::WriteCounter { value: 9 })
        .await;
    assert_eq!(wrote.expect("write"), SqlReply::Rows(1));
    server.kill_connection(sa.id()).expect("KILL CONNECTION");
    let gb = granted_after_kill(&b).await;
    let n = b
        .session()
        .exec(SqlCommand::ReadCounter)
        .await
        .expect("read");
    assert_eq!(n, SqlReply::Int(0), "a's write rolled back with its lock");
    assert!(matches!(ga.release().await, Err(LockError::NotHeld { .. })));
    b.session()
        .exec(SqlCommand::WriteCounter { value: 1 })
        .await
        .expect("write");
    gb.release().await.expect("commit");
    let n = a_fresh_read(&server.url()).await;
    assert_eq!(n, SqlReply::Int(1), "b's write committed with its release");
}

async fn a_fresh_read(url: &str) -> SqlReply {
    session(url, None)
        .await
        .exec(SqlCommand::ReadCounter)
        .await
        .expect("read")
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_advisory_locks_under_pg_terminate_backend() {
    let server = postgres();
    let sa = session(&server.url(), None).await;
    let a = SessionLock::new(sa.clone(), "adv")
        .fenced()
        .expect("postgres");
    let b = SessionLock::new(session(&server.url(), None).await, "adv")
        .fenced()
        .expect("postgres");
    let ga = granted(&a).await;
    assert!(busy(&b).await);
    let pid = u32::try_from(sa.id()).expect("pid");
    assert!(server.terminate_backend(pid).expect("terminate"));
    // pg-advisory: b is granted while a works on; pg-advisory-fenced: b's token is
    // larger, so a resource can refuse a.
    let gb = granted_after_kill(&b).await;
    assert!(gb.token() > ga.token(), "{:?} {:?}", gb.token(), ga.token());
    assert!(ga.release().await.is_err());
    gb.release().await.expect("unlock");

    let sx = session(&server.url(), None).await;
    let x = TxLock::advisory_xact(sx.clone(), "xact").expect("postgres");
    let y = TxLock::advisory_xact(session(&server.url(), None).await, "xact").expect("pg");
    let gx = granted(&x).await;
    assert!(busy(&y).await);
    x.session()
        .exec(SqlCommand::WriteCounter { value: 5 })
        .await
        .expect("write");
    let pid = u32::try_from(sx.id()).expect("pid");
    assert!(server.terminate_backend(pid).expect("terminate"));
    let gy = granted_after_kill(&y).await;
    let n = y
        .session()
        .exec(SqlCommand::ReadCounter)
        .await
        .expect("read");
    assert_eq!(
        n,
        SqlReply::Int(0),
        "pg-advisory-xact: the write rolled back"
    );
    assert!(gx.release().await.is_err());
    gy.release().await.expect("commit");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_url_is_a_clear_error() {
    let e = Session::connect("redis://127.0.0.1:1", None)
        .await
        .expect_err("not SQL");
    assert!(e.to_string().contains("mysql:// or postgres://"), "{e}");
    let e = Session::connect("postgres://postgres@127.0.0.1:1/postgres", None)
        .await
        .expect_err("nothing listens");
    assert!(e.to_string().contains("backend error"), "{e}");
}

/// A free loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_or_misconfigured_database_is_a_clear_error() {
    let port = closed_port();
    for url in [
        format!("mysql://locklab@127.0.0.1:{port}/locklab"),
        format!("postgres://locklab@127.0.0.1:{port}/locklab"),
    ] {
        let e = Session::connect(&url, None)
            .await
            .expect_err("nothing listens");
        assert!(matches!(e, LockError::Backend(_)), "{url}: {e:?}");
    }
    let e = Session::connect("redis://127.0.0.1:6379", None)
        .await
        .expect_err("not SQL");
    assert!(e.to_string().contains("mysql:// or postgres://"), "{e}");
    // The right server, the wrong credentials or database.
    let server = mariadb();
    let db = format!("/{}", locklab_servers::mariadb::DATABASE);
    let wrong = server.url().replacen(&db, "/no_such_db", 1);
    let e = Session::connect(&wrong, None)
        .await
        .expect_err("no such database");
    assert!(e.to_string().contains("no_such_db"), "{e}");
    let e = Session::connect(&format!("postgres://{}", server.addr()), None)
        .await
        .expect_err("a MariaDB port does not speak PostgreSQL");
    assert!(matches!(e, LockError::Backend(_)), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_table_is_a_clear_error_not_a_grant_or_a_panic() {
    let server = postgres();
    // No `ensure_schema`: the `locks` table does not exist.
    let s = Arc::new(
        Session::connect(&server.url(), None)
            .await
            .expect("connects"),
    );
    let lock = UniqueKeyLock::new(s.clone(), "k");
    let e = lock.try_acquire(LEASE).await.expect_err("no table");
    assert!(e.to_string().contains("locks"), "{e}");
    let e = TxLock::for_update_on_row(s, "k")
        .try_acquire(LEASE)
        .await
        .expect_err("no table");
    assert!(e.to_string().contains("locks"), "{e}");
}
