//! `mariadbd` on a free loopback port with its own data dir (made by
//! `mariadb-install-db` at the first launch) and socket, as BACKENDS.md describes: never
//! the packaged service, never a shared dir. Clients log in as `lockuser` to the `locks`
//! database over TCP; the operator's controls (`KILL CONNECTION`, checks) go through the
//! `mariadb` client as root over the socket, never through the code under test.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program.
pub const BINARY: &str = "mariadbd";

/// Makes the data dir.
pub const INSTALL_DB: &str = "mariadb-install-db";

/// The client the controls use.
pub const CLIENT: &str = "mariadb";

/// The family's data dirs are named `locklab-mariadb-…`.
pub const FAMILY: &str = "mariadb";

/// The database the clients use.
pub const DATABASE: &str = "locks";

/// The clients' user and password.
pub const USER: (&str, &str) = ("lockuser", "lockpw");

/// A running MariaDB server.
#[derive(Debug)]
pub struct MariaDbServer {
    process: ServerProcess,
    /// Runs under libfaketime ([`MariaDbServer::set_clock`] moves its clock).
    fake_clock: bool,
}

/// Whether something on `port` sends a MySQL handshake (protocol version 10), which
/// `mariadbd` only does once InnoDB is up and it accepts connections.
fn greets(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 5];
    s.read_exact(&mut buf).is_ok() && buf[4] == 10
}

fn run(cmd: &mut Command, binary: &'static str) -> Result<String, ServerError> {
    let out = cmd.output().map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ServerError::Missing { binary, source }
        } else {
            ServerError::Io(source)
        }
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(ServerError::Io(std::io::Error::other(format!(
            "{binary} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))))
    }
}

impl MariaDbServer {
    /// Starts a server with an empty `locks` database and the clients' user.
    pub fn start() -> Result<Self, ServerError> {
        Self::start_with(false)
    }

    /// As [`MariaDbServer::start`], under libfaketime when `fake_clock`, so that
    /// [`MariaDbServer::set_clock`] can move the clock its `NOW()` reads.
    pub fn start_with(fake_clock: bool) -> Result<Self, ServerError> {
        ServerProcess::start(BINARY, FAMILY, |process| MariaDbServer {
            process,
            fake_clock,
        })
    }

    /// Sets the server's clock offset (`"+3"`: 3 s ahead), read at its next clock read;
    /// an error for a server not started under libfaketime.
    pub fn set_clock(&self, spec: &str) -> Result<(), ServerError> {
        crate::clock::FakeClock::set_faked(self.fake_clock, self.dir(), spec)
    }

    fn data(&self) -> PathBuf {
        self.dir().join("data")
    }

    /// The server's Unix socket (the root controls use it).
    pub fn socket(&self) -> PathBuf {
        self.dir().join("mysqld.sock")
    }

    /// `mysql://lockuser:lockpw@127.0.0.1:PORT/locks`, what clients connect to.
    pub fn url(&self) -> String {
        format!(
            "mysql://{}:{}@127.0.0.1:{}/{DATABASE}",
            USER.0,
            USER.1,
            self.port()
        )
    }

    /// Runs `sql` as root through the `mariadb` client and returns its tab-separated
    /// output without headers, or the client's error.
    pub fn sql(&self, sql: &str) -> Result<String, ServerError> {
        run(
            Command::new(CLIENT)
                .arg("--no-defaults")
                .arg("-S")
                .arg(self.socket())
                .args(["-uroot", "-N", "-B", "-e", sql]),
            CLIENT,
        )
    }

    /// `KILL CONNECTION id` as root: what an operator (or the server's own timeout) does
    /// to a session.
    pub fn kill_connection(&self, id: u64) -> Result<(), ServerError> {
        self.sql(&format!("KILL CONNECTION {id}")).map(drop)
    }

    fn install(&self) -> Result<(), ServerError> {
        run(
            Command::new(INSTALL_DB)
                .arg("--no-defaults")
                .arg("--user=root")
                .arg(format!("--datadir={}", self.data().display()))
                .arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db")
                .current_dir(self.dir()),
            INSTALL_DB,
        )
        .map(drop)
    }
}

impl Server for MariaDbServer {
    process_field!();

    fn launch(&mut self) -> Result<(), ServerError> {
        let fresh = !self.data().exists();
        if fresh {
            self.install()?;
        }
        let d = self.dir().to_path_buf();
        let mut cmd = Command::new(BINARY);
        cmd.arg("--no-defaults")
            .arg("--user=root")
            .arg(format!("--datadir={}", self.data().display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--port={}", self.port()))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--pid-file={}", d.join("mysqld.pid").display()))
            .arg("--innodb-buffer-pool-size=64M")
            // The lock rows test exclusion, not durability: skip the fsync per commit.
            .arg("--innodb-flush-log-at-trx-commit=2")
            .arg("--skip-name-resolve");
        if self.fake_clock {
            crate::clock::FakeClock::in_dir(&d).wrap(&mut cmd, "")?;
        }
        self.process.spawn(cmd)?;
        let port = self.port();
        self.process.wait_ready(READY_TIMEOUT, || greets(port))?;
        if fresh {
            let (user, pw) = USER;
            self.sql(&format!(
                "CREATE DATABASE IF NOT EXISTS {DATABASE}; \
                 CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{pw}'; \
                 GRANT ALL ON {DATABASE}.* TO '{user}'@'127.0.0.1'"
            ))?;
        }
        Ok(())
    }

    fn state(&self) -> Option<PathBuf> {
        Some(self.data())
    }
}
