//! The protocol-specific half of a held lock, which the guard and the watchdog drive.

use std::time::Duration;

use crate::box_future::BoxFuture;
use crate::error::LockError;

/// The protocol-specific part of a held lock: how to give it back and how to extend it.
///
/// Implement this (with [`DistributedLock`](crate::DistributedLock)) to plug your own
/// lock into the harness. `release` gives back *one* hold (one re-entry of a reentrant
/// lock) and must answer [`LockError::NotHeld`] when the backend says the lock is not
/// yours any more.
pub trait HeldLock: Send + Sync + 'static {
    /// Gives back one hold on the backend.
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>>;

    /// Gives it back as the release of a failed unit of work: a lock whose release
    /// ends a transaction rolls it back ([`LockError::RolledBack`] once the server has
    /// answered). The default, for a lock that ends no transaction: the release.
    fn release_rolling_back(&self) -> BoxFuture<'_, Result<(), LockError>> {
        self.release()
    }

    /// Extends the lease to `lease` from now; [`LockError::NotHeld`] if the backend says
    /// the lock is no longer ours. The default: the protocol cannot renew.
    fn renew(&self, lease: Duration) -> BoxFuture<'_, Result<(), LockError>> {
        let _ = lease;
        Box::pin(async {
            Err(LockError::Unsupported {
                protocol: "this lock",
                what: "renewal",
            })
        })
    }
}
