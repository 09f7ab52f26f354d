//! A server's own clock under libfaketime: its offset is read from a file in the
//! server's data dir at every clock read, so a nemesis can jump it (or speed it up)
//! while the server runs. Measured here with `+10d` and a jump to `+20d` at runtime:
//! - redis-server and `mariadbd` follow it (`NOW()`, `SYSDATE()`); MariaDB's own
//!   timers (`max_statement_time`, `innodb_lock_wait_timeout`) still fire on time;
//! - PostgreSQL's `now()` follows it, but under any offset ahead its timers stop
//!   firing (`statement_timeout` let a 2 s `pg_sleep` finish), so a faked clock would
//!   change what the server does beyond its clock: locklab does not fake PostgreSQL's;
//! - a JVM (ZooKeeper) sees its wall clock and `System.nanoTime` moved;
//! - etcd (Go) does not: Go reads the clock through the vDSO itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// libfaketime's library.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The clock file of a server whose data dir is `dir`.
#[derive(Clone, Debug)]
pub struct FakeClock {
    file: PathBuf,
}

impl FakeClock {
    /// The clock of the server whose data dir is `dir` (not yet written).
    pub fn in_dir(dir: &Path) -> FakeClock {
        FakeClock {
            file: dir.join("clock"),
        }
    }

    /// Makes `cmd` run under libfaketime with this clock, `preload` first (`""`: none;
    /// redis-server needs tcmalloc before it), at no offset unless one was set.
    pub fn wrap(&self, cmd: &mut Command, preload: &str) -> std::io::Result<()> {
        if !self.file.exists() {
            std::fs::write(&self.file, "+0\n")?;
        }
        let lib = if preload.is_empty() {
            LIBFAKETIME.to_string()
        } else {
            format!("{preload}:{LIBFAKETIME}")
        };
        cmd.env("LD_PRELOAD", lib)
            .env("FAKETIME_TIMESTAMP_FILE", &self.file)
            .env("FAKETIME_NO_CACHE", "1");
        Ok(())
    }

    /// Sets the offset of the server whose data dir is `dir` ([`FakeClock::set`]); an
    /// error unless it was started under libfaketime (`faked`).
    pub fn set_faked(faked: bool, dir: &Path, spec: &str) -> Result<(), crate::ServerError> {
        if !faked {
            return Err(crate::ServerError::Io(std::io::Error::other(
                "this server was not started under libfaketime",
            )));
        }
        FakeClock::in_dir(dir)
            .set(spec)
            .map_err(crate::ServerError::Io)
    }

    /// Sets the offset: `"+31"` jumps the clock 31 s ahead, `"+0 x2"` runs it twice as
    /// fast. It takes effect at the server's next clock read.
    pub fn set(&self, spec: &str) -> std::io::Result<()> {
        // Write-then-rename: the server may read the file at any instant.
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, format!("{spec}\n"))?;
        std::fs::rename(tmp, &self.file)
    }
}
