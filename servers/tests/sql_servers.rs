//! The SQL servers start on their own port and data dir, answer a query, survive the
//! controls the nemesis uses (kill a session, restart) and leave nothing running.
#![cfg(feature = "backends")]

use locklab_servers::{MariaDbServer, PostgresServer, Server};

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn mariadb_answers_kills_a_session_and_restarts_with_its_data() {
    let mut s = MariaDbServer::start().expect("mariadbd (run ci/setup.sh)");
    assert_eq!(s.sql("SELECT 1 + 1").expect("query"), "2");
    assert!(s.url().contains(&format!("127.0.0.1:{}/locks", s.port())));
    s.sql("CREATE TABLE locks.t (n INT); INSERT INTO locks.t VALUES (7)")
        .expect("table");
    // A session of its own to kill: a GET_LOCK held by a sleeping client.
    let mut holder = std::process::Command::new("mariadb")
        .args(["--no-defaults", "-S"])
        .arg(s.socket())
        .args(["-uroot", "-e", "SELECT GET_LOCK('l', 0); SELECT SLEEP(30)"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("client");
    let mut id = String::new();
    for _ in 0..100 {
        id = s.sql("SELECT IS_USED_LOCK('l')").expect("is_used_lock");
        if id != "NULL" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let id: u64 = id.parse().expect("a session holds the lock");
    s.kill_connection(id).expect("kill");
    assert_eq!(s.sql("SELECT IS_FREE_LOCK('l')").expect("free"), "1");
    let _ = holder.kill();
    let _ = holder.wait();
    let port = s.port();
    s.restart_keeping_data().expect("restart");
    assert_eq!(s.port(), port);
    assert_eq!(s.sql("SELECT n FROM locks.t").expect("kept"), "7");
    s.restart().expect("restart empty");
    assert!(s.sql("SELECT n FROM locks.t").is_err(), "wiped");
    let pid = s.pid().expect("running");
    let dir = s.dir().to_path_buf();
    drop(s);
    assert!(!alive(pid), "killed on drop");
    assert!(!dir.exists(), "data dir removed");
}

#[test]
fn postgres_answers_terminates_a_backend_and_stops() {
    let s = PostgresServer::start().expect("postgres (run ci/setup.sh)");
    assert_eq!(s.sql("SELECT 1 + 1").expect("query"), "2");
    assert!(s
        .url()
        .ends_with(&format!("127.0.0.1:{}/postgres", s.port())));
    let mut holder = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &s.port().to_string(),
            "-U",
            "postgres",
            "-X",
        ])
        .args(["-c", "SELECT pg_advisory_lock(1), pg_sleep(30)"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("client");
    let mut pid = String::new();
    for _ in 0..100 {
        pid = s
            .sql("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted")
            .expect("pg_locks");
        if !pid.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid: u32 = pid.parse().expect("a backend holds the lock");
    assert!(s.terminate_backend(pid).expect("terminate"));
    assert_eq!(s.sql("SELECT pg_try_advisory_lock(1)").expect("free"), "t");
    let _ = holder.kill();
    let _ = holder.wait();
    let postmaster = s.pid().expect("running");
    let dir = s.dir().to_path_buf();
    drop(s);
    assert!(!alive(postmaster), "stopped on drop");
    assert!(!dir.exists(), "data dir removed");
}

#[test]
fn a_missing_binary_is_a_clear_failure() {
    let e = locklab_servers::ServerProcess::reserve("no-such-sql-server", "test")
        .map(|mut p| p.spawn(std::process::Command::new("no-such-sql-server")));
    let Ok(Err(e)) = e else {
        panic!("spawning a missing program must fail");
    };
    assert!(e.to_string().contains("not found"), "{e}");
    assert!(e.to_string().contains("ci/setup.sh"), "{e}");
}
