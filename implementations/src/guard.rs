//! What a successful acquire hands back: release, renew, fencing token, lost ownership.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::LockError;
// Also reachable here, where they were first defined: code outside the crate may name
// them by this path.
pub use crate::held_lock::HeldLock;
pub use crate::hold_cell::HoldCell;
use crate::lease::Lease;
use crate::ownership::{valid_until, LostReason, Ownership};
use crate::watchdog;

/// A held lock. Release it with [`LockGuard::release`]; dropping it releases in the
/// background (best effort, on the current tokio runtime) so that a panicking critical
/// section does not keep the lock for a whole lease.
pub struct LockGuard {
    protocol: &'static str,
    key: String,
    token: Option<u64>,
    held: Option<Arc<dyn HeldLock>>,
    cell: Arc<HoldCell>,
    ownership: Arc<Ownership>,
    /// The lease the service said it granted, when it said so (see
    /// [`LockGuard::with_granted_lease`]).
    granted_lease: Option<Lease>,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("protocol", &self.protocol)
            .field("key", &self.key)
            .field("token", &self.token)
            .field("released", &self.held.is_none())
            .field("lost", &self.ownership.lost_reason())
            .finish()
    }
}

impl LockGuard {
    /// A guard for a grant the backend confirmed. `sent_at` is when the acquire request
    /// left (validity is counted from there, minus a drift margin); `lease` decides the
    /// deadline and whether a watchdog renews through `held`.
    pub fn new(
        protocol: &'static str,
        key: impl Into<String>,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
    ) -> Self {
        Self::in_cell(protocol, key, token, held, lease, sent_at, HoldCell::new())
    }

    /// A guard counted in a shared cell (a reentrant handle's).
    pub fn in_cell(
        protocol: &'static str,
        key: impl Into<String>,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
        cell: Arc<HoldCell>,
    ) -> Self {
        let deadline = lease.ttl().map(|ttl| valid_until(sent_at, ttl));
        let ownership = enter(&cell, &held, lease, deadline);
        Self::assemble(protocol, key, token, held, cell, ownership)
    }

    /// A guard for a grant whose validity is known but not counted from a request of
    /// its own: a lock passed on before the server confirmed the pass keeps the
    /// validity of the grant it came from until the confirmation extends it.
    pub(crate) fn with_validity(
        protocol: &'static str,
        key: impl Into<String>,
        held: Arc<dyn HeldLock>,
        lease: Lease,
        valid_until: Instant,
    ) -> Self {
        let cell = HoldCell::new();
        let ownership = enter(&cell, &held, lease, Some(valid_until));
        Self::assemble(protocol, key, None, held, cell, ownership)
    }

    fn assemble(
        protocol: &'static str,
        key: impl Into<String>,
        token: Option<u64>,
        held: Arc<dyn HeldLock>,
        cell: Arc<HoldCell>,
        ownership: Arc<Ownership>,
    ) -> Self {
        LockGuard {
            protocol,
            key: key.into(),
            token,
            held: Some(held),
            cell,
            ownership,
            granted_lease: None,
        }
    }

    /// Notes the lease the service says it granted, where that is not the one asked
    /// for (a library that rounds a 500 ms lease up to a whole second): a history
    /// holds the grant to it.
    pub fn with_granted_lease(mut self, lease: Lease) -> Self {
        self.granted_lease = Some(lease);
        self
    }

    /// The lease the service said it granted, when it said so.
    pub fn granted_lease(&self) -> Option<Lease> {
        self.granted_lease
    }

    /// The protocol id.
    pub fn protocol(&self) -> &'static str {
        self.protocol
    }

    /// The lock name.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The fencing token of this grant, for protocols that issue one. Pass it to the
    /// protected resource, which must refuse writes with a token older than one it saw.
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// Until when the client may safely believe it holds the lock (`None`: no lease).
    pub fn valid_until(&self) -> Option<Instant> {
        self.ownership.valid_until()
    }

    /// Whether ownership is known lost (refused renewal, or validity ran out).
    pub fn is_lost(&self) -> bool {
        self.ownership.is_lost()
    }

    /// Why ownership is lost, if it is.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.ownership.lost_reason()
    }

    /// Resolves when ownership is lost; race it against the critical section.
    pub async fn lost(&self) -> LostReason {
        self.ownership.lost().await
    }

    /// Resolves when the lock says ownership is gone ([`Ownership::told_lost`]).
    pub async fn told_lost(&self) -> LostReason {
        self.ownership.told_lost().await
    }

    /// The shared ownership record (for a harness that watches it from another task).
    pub fn ownership(&self) -> Arc<Ownership> {
        self.ownership.clone()
    }

    /// Extends the lease to `lease` from now (an explicit renewal; the watchdog does this
    /// by itself). Marks ownership lost when the backend refuses.
    pub async fn renew(&self, lease: Duration) -> Result<(), LockError> {
        let Some(held) = &self.held else {
            return Err(LockError::NotHeld {
                key: self.key.clone(),
                reason: None,
            });
        };
        let sent_at = Instant::now();
        match held.renew(lease).await {
            Ok(()) => {
                self.ownership.extend(valid_until(sent_at, lease));
                Ok(())
            }
            Err(e @ LockError::NotHeld { .. }) => {
                self.ownership.mark_lost(LostReason::Refused);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Has `observer` told of every renewal this grant's watchdog sends from now on
    /// (none without a [`Lease::Watchdog`] lease).
    pub fn observe_renewals(&self, observer: crate::ownership::RenewalObserver) {
        self.ownership.observe_renewals(observer);
    }

    /// Gives the hold back. [`LockError::NotHeld`] means the lock had already been lost
    /// (expired, or taken by someone else) — the critical section was not protected
    /// all the way through, and the caller should know.
    pub async fn release(mut self) -> Result<(), LockError> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        // Count the release first, so the watchdog stops before the server forgets us.
        self.cell.exit();
        held.release().await
    }

    /// Releases as the end of a failed unit of work: the lock's transaction, where its
    /// release ends one, rolls back ([`HeldLock::release_rolling_back`]). For fault
    /// injection: a method that throws after its lock was released.
    pub async fn release_rolling_back(mut self) -> Result<(), LockError> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        self.cell.exit();
        held.release_rolling_back().await
    }

    /// Simulates a client crash: stops counting the hold (and so the watchdog) without
    /// telling the server. The lock stays taken until its lease runs out — forever for a
    /// lock without lease. For fault injection in tests and teaching.
    pub fn abandon(mut self) {
        if self.held.take().is_some() {
            self.cell.exit();
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        self.cell.exit();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                // Best effort: nobody is left to hear about a failure, and the lease
                // bounds the harm.
                let _ = held.release().await;
            });
        }
    }
}

/// Counts a grant in `cell`; the first hold of a generation of a [`Lease::Watchdog`]
/// grant starts a watchdog renewing through `renewer`.
fn enter(
    cell: &Arc<HoldCell>,
    renewer: &Arc<dyn HeldLock>,
    lease: Lease,
    deadline: Option<Instant>,
) -> Arc<Ownership> {
    cell.enter(deadline, |generation, ownership| {
        if let Lease::Watchdog(ttl) = lease {
            watchdog::spawn(
                cell.clone(),
                renewer.clone(),
                generation,
                ttl,
                ownership.clone(),
            );
        }
    })
}
