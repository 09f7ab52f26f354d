//! The server controls the harness's nemesis uses, on real redis-server processes:
//! restart with and without data, pause and resume, a libfaketime clock jump, and the
//! reaper that a Ctrl-C handler empties.

#![cfg(feature = "backends")]

use std::process::Command;
use std::time::{Duration, Instant};

use locklab_servers::{reaper, RedisServer, Server, ServerConfig};

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not happen within 5 s");
}

#[test]
fn restart_keeps_or_empties_the_data() {
    let mut s = RedisServer::start().expect("redis-server (run ci/setup.sh)");
    let port = s.port();
    assert_eq!(s.cli(&["SET", "k", "v"]), "OK");
    s.restart_keeping_data().expect("restart keeping data");
    assert_eq!(s.port(), port, "same port");
    assert_eq!(s.cli(&["GET", "k"]), "v", "kept across the restart");
    s.restart().expect("restart empty");
    assert_eq!(s.cli(&["GET", "k"]), "", "gone after an empty restart");
}

#[test]
fn a_paused_server_answers_only_after_resume() {
    let s = RedisServer::start().expect("redis-server");
    s.pause();
    let answered = {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port())).expect("connects");
        c.set_read_timeout(Some(Duration::from_millis(700)))
            .expect("timeout");
        c.write_all(b"PING\r\n").expect("writes");
        let mut buf = [0u8; 16];
        matches!(c.read(&mut buf), Ok(n) if n > 0)
    };
    assert!(!answered, "a stopped server must not answer");
    s.resume();
    wait_for("PONG after SIGCONT", || s.cli(&["PING"]) == "PONG");
}

#[test]
fn a_clock_jump_expires_a_lease_at_once() {
    let s = RedisServer::start_config(ServerConfig {
        fake_clock: true,
        ..ServerConfig::default()
    })
    .expect("redis-server under libfaketime (run ci/setup.sh)");
    assert_eq!(s.cli(&["SET", "lock", "a", "PX", "30000"]), "OK");
    assert_eq!(s.cli(&["GET", "lock"]), "a");
    s.set_clock("+31").expect("clock file");
    wait_for("the jump to expire the key", || {
        s.cli(&["GET", "lock"]).is_empty()
    });
}

#[test]
fn stop_shuts_down_and_start_again_brings_it_back() {
    let mut s = RedisServer::start().expect("redis-server");
    s.stop();
    assert!(!s.is_running());
    s.start_again().expect("starts again");
    assert_eq!(s.cli(&["PING"]), "PONG");
}

/// Run by [`the_reaper_kills_what_drop_would`] in a process of its own: the reaper
/// kills every server of its process, which in this test binary would be every other
/// test's too (it killed the Redlock test's live nodes mid-test).
#[test]
#[ignore = "the child of the_reaper_kills_what_drop_would"]
fn reaper_child() {
    if std::env::var_os("LOCKLAB_REAPER_CHILD").is_none() {
        return;
    }
    let mut s = RedisServer::start().expect("redis-server");
    assert!(reaper::count() >= 1);
    reaper::kill_all();
    wait_for("the server to die", || !s.is_running());
}

#[test]
fn the_reaper_kills_what_drop_would() {
    // The child test's name as libtest knows it: its module's path inside the test
    // binary, without the binary's own name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", &format!("{module}::reaper_child"), "--ignored"])
        .env("LOCKLAB_REAPER_CHILD", "1")
        .output()
        .expect("the child");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("1 passed"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
