//! How long a grant lives: the lease an acquire asks for.

use std::time::Duration;

/// How long a granted lock lives if its holder goes silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lease {
    /// No expiry: held until released. Only the teaching locks without a TTL take it,
    /// which is exactly why they deadlock when a holder crashes.
    Unbounded,
    /// Expires this long after the grant unless
    /// [`LockGuard::renew`](crate::LockGuard::renew) extends it.
    Fixed(Duration),
    /// Granted with this lease, then renewed every lease/3 by a watchdog task until the
    /// guard is released (Redisson's default: 30 s). The watchdog stops on release and
    /// reports lost ownership when a renewal is refused or the lease runs out unrenewed.
    Watchdog(Duration),
}

impl Lease {
    /// The TTL sent to the server, if any.
    pub fn ttl(self) -> Option<Duration> {
        match self {
            Lease::Unbounded => None,
            Lease::Fixed(d) | Lease::Watchdog(d) => Some(d),
        }
    }
}
