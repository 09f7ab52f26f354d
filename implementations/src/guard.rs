//! What a successful acquire hands back: release, renew, fencing token, lost ownership.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::error::LockError;
use crate::hold_state::HoldState;
use crate::lock::{BoxFuture, Lease};
use crate::ownership::{valid_until, LostReason, Ownership};

/// The protocol-specific part of a held lock: how to give it back and how to extend it.
///
/// Implement this (with [`DistributedLock`](crate::DistributedLock)) to plug your own
/// lock into the harness. `release` gives back *one* hold (one re-entry of a reentrant
/// lock) and must answer [`LockError::NotHeld`] when the backend says the lock is not
/// yours any more.
pub trait HeldLock: Send + Sync + 'static {
    /// Gives back one hold on the backend.
    fn release(&self) -> BoxFuture<'_, Result<(), LockError>>;

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

/// The client-side state of one lock handle's holds: count, generation, watchdog
/// wake-up, and the ownership of the current generation. A non-reentrant grant has a
/// cell of its own; a reentrant handle shares one cell between all its guards.
#[derive(Debug)]
pub struct HoldCell {
    state: HoldState,
    wake: Notify,
    ownership: std::sync::Mutex<Arc<Ownership>>,
}

impl Default for HoldCell {
    fn default() -> Self {
        HoldCell {
            state: HoldState::new(),
            wake: Notify::new(),
            ownership: std::sync::Mutex::new(Arc::new(Ownership::new(None))),
        }
    }
}

impl HoldCell {
    /// A cell with no holds.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Holds currently counted.
    pub fn holds(&self) -> u32 {
        self.state.holds()
    }

    pub(crate) fn state(&self) -> &HoldState {
        &self.state
    }

    pub(crate) fn wake(&self) -> &Notify {
        &self.wake
    }

    /// Counts a grant the server just confirmed (sent at `sent_at` with `lease`): the
    /// first hold of a generation gets fresh ownership and, for [`Lease::Watchdog`], a
    /// watchdog renewing through `renewer`; a re-entry refreshes the deadline.
    pub(crate) fn enter(
        self: &Arc<Self>,
        renewer: Arc<dyn HeldLock>,
        lease: Lease,
        sent_at: Instant,
    ) -> Arc<Ownership> {
        let deadline = lease.ttl().map(|ttl| valid_until(sent_at, ttl));
        self.enter_until(renewer, lease, deadline)
    }

    /// [`HoldCell::enter`] with the validity deadline given rather than computed.
    fn enter_until(
        self: &Arc<Self>,
        renewer: Arc<dyn HeldLock>,
        lease: Lease,
        deadline: Option<Instant>,
    ) -> Arc<Ownership> {
        let mut slot = self.ownership.lock().unwrap_or_else(|p| p.into_inner());
        let entered = self.state.enter();
        if entered.first {
            *slot = Arc::new(Ownership::new(deadline));
            if let Lease::Watchdog(ttl) = lease {
                crate::watchdog::spawn(
                    self.clone(),
                    renewer,
                    entered.generation,
                    ttl,
                    slot.clone(),
                );
            }
        } else if let Some(d) = deadline {
            slot.extend(d);
        }
        slot.clone()
    }

    /// Counts one release; wakes the watchdog when the generation ends. Called *before*
    /// the release command is sent (see [`HoldState`]).
    pub(crate) fn exit(&self) -> bool {
        match self.state.exit() {
            Some(e) => {
                if e.last {
                    self.wake.notify_waiters();
                }
                true
            }
            None => false,
        }
    }
}

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
        let ownership = cell.enter(held.clone(), lease, sent_at);
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
        let ownership = cell.enter_until(held.clone(), lease, Some(valid_until));
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
        }
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

/// Re-exported for the watchdog: the renewal path mirrors [`LockGuard::renew`].
pub(crate) fn mark_refused(o: &Ownership) {
    o.mark_lost(LostReason::Refused);
}
