//! Ports nothing else takes between the moment locklab picks one and the moment its
//! server binds it.
//!
//! Binding port 0, closing, and handing the number to a server leaves a window in which
//! any outgoing connection of the machine may be given that port by the kernel (seen:
//! an etcd member that could not bind its client port). Two things close the window:
//! - ports are picked below the kernel's ephemeral range
//!   (`/proc/sys/net/ipv4/ip_local_port_range`), which outgoing connections and port-0
//!   binds draw from, so no connection of any program is ever given one of them;
//! - every picked port is held by a lock file (`flock`) for as long as its server may
//!   use it, so two locklab processes (test binaries side by side, nextest) never pick
//!   the same one; the kernel drops the lock with the process, also on `kill -9`.
//!
//! A port that some other program listens on is skipped.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port locklab picks: above the well-known and most registered services'.
const FLOOR: u16 = 20_000;

/// Candidates tried before giving up (a machine with thousands of listeners).
const TRIES: u32 = 2_000;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A loopback port held for one server for as long as this lives.
#[derive(Debug)]
pub struct PortLease {
    port: u16,
    /// Holds the `flock`; `None` where no lock dir could be made (then only the range
    /// protects the port).
    _lock: Option<File>,
}

impl PortLease {
    /// The number held: a lock file keeps other locklab processes off it while this lives.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// The kernel's ephemeral range, `(low, high)`; Linux's default when unreadable.
fn ephemeral_range() -> (u16, u16) {
    let text =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(low), Some(high)) if low <= high => (low, high),
        _ => (32_768, 60_999),
    }
}

/// The ports locklab picks from: below the ephemeral range when there is room, else
/// above it, else (a machine whose whole range is ephemeral) the ephemeral range itself,
/// where only the lock files and the bind check protect a port.
fn pick_range() -> (u16, u16) {
    let (low, high) = ephemeral_range();
    if low > FLOOR + 1_000 {
        (FLOOR, low - 1)
    } else if high < u16::MAX - 1_000 {
        (high + 1, u16::MAX)
    } else {
        (FLOOR, u16::MAX)
    }
}

/// Where the lock files live (one per port, shared by every locklab process of the
/// machine). Made world-writable with the sticky bit, as `/tmp` is.
pub(crate) fn lock_dir() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join("locklab-ports");
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).ok()?;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
    }
    Some(dir)
}

/// Takes the port's lock file without waiting: `None` when another process holds it.
fn try_lock(dir: &std::path::Path, port: u16) -> Option<File> {
    try_lock_name(dir, &port.to_string())
}

/// Takes the lock file `NAME.lock` without waiting (a port's, a lab subnet's): `None`
/// when another process holds it.
pub(crate) fn try_lock_name(dir: &std::path::Path, name: &str) -> Option<File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{name}.lock")))
        .ok()?;
    // SAFETY: flock(2) on a descriptor this function owns.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    (r == 0).then_some(file)
}

/// Whether nothing listens on the port now (a listener on any address of the machine
/// makes the loopback bind fail too).
fn bindable(port: u16) -> bool {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_ok()
}

/// The port `well_known` on a host of its own (a lab's namespace), where nothing but
/// its one server binds: nothing to pick, nothing to hold.
pub fn fixed(well_known: u16) -> PortLease {
    PortLease {
        port: well_known,
        _lock: None,
    }
}

/// The `well_known` port for a server on a lab host of its own, else a loopback lease.
pub fn for_host(on_host: bool, well_known: u16) -> std::io::Result<PortLease> {
    if on_host {
        Ok(fixed(well_known))
    } else {
        lease()
    }
}

/// A port for one server: outside the ephemeral range, locked against every other
/// locklab process, and not listened on by anyone else right now.
pub fn lease() -> std::io::Result<PortLease> {
    let (low, high) = pick_range();
    let span = u32::from(high - low) + 1;
    // Processes start at different places, so they rarely contend for one lock file.
    let start = std::process::id().wrapping_mul(7_919) ^ NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = lock_dir();
    for i in 0..TRIES {
        let offset = start.wrapping_add(i.wrapping_mul(4_099)) % span;
        let Ok(port) = u16::try_from(u32::from(low) + offset) else {
            continue;
        };
        let lock = match &dir {
            Some(d) => match try_lock(d, port) {
                Some(f) => Some(f),
                None => continue,
            },
            None => None,
        };
        if bindable(port) {
            return Ok(PortLease { port, _lock: lock });
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("no free port in {low}..={high} after {TRIES} tries"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leased_ports_are_outside_the_ephemeral_range_and_never_handed_out_twice() {
        let (low, high) = ephemeral_range();
        let leases: Vec<_> = (0..200).map(|_| lease().expect("a port")).collect();
        let mut ports: Vec<u16> = leases.iter().map(PortLease::port).collect();
        if low > FLOOR + 1_000 {
            assert!(ports.iter().all(|p| *p < low || *p > high), "{ports:?}");
        }
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 200, "a port was leased twice");
    }

    #[test]
    fn a_port_held_by_another_lease_or_a_listener_is_skipped() {
        let held = lease().expect("a port");
        let dir = lock_dir().expect("lock dir");
        assert!(
            try_lock(&dir, held.port()).is_none(),
            "a held port's lock file must refuse a second holder"
        );
        drop(held);
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("bind");
        let busy = listener.local_addr().expect("addr").port();
        assert!(!bindable(busy));
    }
}
