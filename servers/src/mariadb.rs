//! `mariadbd` on a free loopback port — or on a lab host's address — with its own data dir (made by
//! `mariadb-install-db` at the first launch) and socket, as BACKENDS.md describes: never
//! the packaged service, never a shared dir. Clients log in as `lockuser` to the `locks`
//! database over TCP; the operator's controls (`KILL CONNECTION`, checks) go through the
//! `mariadb` client as root over the socket, never through the code under test.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::net::Host;
use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program.
pub const BINARY: &str = "mariadbd";

/// Makes the data dir.
pub const INSTALL_DB: &str = "mariadb-install-db";

/// The client the controls use.
pub const CLIENT: &str = "mariadb";

/// Its port on a lab host.
pub const PORT: u16 = 3306;

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

/// Whether something on `ip:port` sends a MySQL handshake (protocol version 10), which
/// `mariadbd` only does once InnoDB is up and it accepts connections.
fn greets(ip: Ipv4Addr, port: u16) -> bool {
    let addr = SocketAddr::from((ip, port));
    let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    handshake(s)
}

/// The same through the server's Unix socket: on a lab host, where no account may
/// log in from the harness's address until the first launch has made one, the TCP
/// port answers with an error packet ("host not allowed") instead of a handshake.
fn greets_on_socket(path: &Path) -> bool {
    let Ok(s) = UnixStream::connect(path) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    handshake(s)
}

/// Whether the first packet read is a handshake (protocol version 10).
fn handshake(mut s: impl Read) -> bool {
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
        Self::start_on(fake_clock, None)
    }

    /// As [`MariaDbServer::start_with`], in `host`'s namespace on its address when
    /// given (a node of a [`crate::net::Lab`]).
    pub fn start_on(fake_clock: bool, host: Option<&Host>) -> Result<Self, ServerError> {
        ServerProcess::start_on(BINARY, FAMILY, host, PORT, |process| MariaDbServer {
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

    /// `mysql://lockuser:lockpw@IP:PORT/locks` (`127.0.0.1` or its lab host's
    /// address), what clients connect to.
    pub fn url(&self) -> String {
        format!(
            "mysql://{}:{}@{}:{}/{DATABASE}",
            USER.0,
            USER.1,
            self.process.ip(),
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
            .arg(format!("--bind-address={}", self.process.ip()))
            .arg(format!("--pid-file={}", d.join("mysqld.pid").display()))
            .arg("--innodb-buffer-pool-size=64M")
            // The lock rows test exclusion, not durability: skip the fsync per commit.
            .arg("--innodb-flush-log-at-trx-commit=2")
            // The inventory benchmark's sweep opens a thousand connections (151 by default).
            .arg("--max-connections=1100")
            .arg("--skip-name-resolve");
        if self.fake_clock {
            crate::clock::FakeClock::in_dir(&d).wrap(&mut cmd, "")?;
        }
        self.process.spawn(cmd)?;
        let (ip, port, socket) = (self.process.ip(), self.port(), self.socket());
        let on_host = self.process.host().is_some();
        self.process.wait_ready(READY_TIMEOUT, || {
            if on_host {
                greets_on_socket(&socket)
            } else {
                greets(ip, port)
            }
        })?;
        if fresh {
            let (user, pw) = USER;
            // On a lab host the clients come from the lab's gateway; the server listens
            // on nothing beyond the lab, so any address of it may log in.
            let from = if self.process.host().is_some() {
                "%"
            } else {
                "127.0.0.1"
            };
            self.sql(&format!(
                "CREATE DATABASE IF NOT EXISTS {DATABASE}; \
                 CREATE USER IF NOT EXISTS '{user}'@'{from}' IDENTIFIED BY '{pw}'; \
                 GRANT ALL ON {DATABASE}.* TO '{user}'@'{from}'"
            ))?;
        }
        Ok(())
    }

    fn state(&self) -> Option<PathBuf> {
        Some(self.data())
    }
}
