//! The renewal task of [`Lease::Watchdog`](crate::Lease::Watchdog) grants: renews every
//! lease/3 (Redisson's schedule) while its generation lasts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::held_lock::HeldLock;
use crate::hold_cell::HoldCell;
use crate::hold_state::{RenewalOutcome, WatchdogStep};
use crate::ownership::{valid_until, LostReason, Ownership, Renewal};

pub(crate) fn spawn(
    cell: Arc<HoldCell>,
    renewer: Arc<dyn HeldLock>,
    generation: u32,
    lease: Duration,
    ownership: Arc<Ownership>,
) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        // No runtime, no watchdog: the lease simply runs out, which `Ownership` reports.
        return;
    };
    rt.spawn(run(cell, renewer, generation, lease, ownership));
}

async fn run(
    cell: Arc<HoldCell>,
    renewer: Arc<dyn HeldLock>,
    generation: u32,
    lease: Duration,
    ownership: Arc<Ownership>,
) {
    let period = (lease / 3).max(Duration::from_millis(1));
    loop {
        let woken = cell.wake().notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if !cell.state().may_renew(generation) {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = woken => {}
        }
        if !cell.state().may_renew(generation) {
            return;
        }
        let sent_at = Instant::now();
        let outcome = match renewer.renew(lease).await {
            Ok(()) => RenewalOutcome::Renewed,
            Err(LockError::NotHeld { .. }) => RenewalOutcome::Refused,
            Err(_) => RenewalOutcome::Failed,
        };
        ownership.renewed(Renewal {
            sent_at,
            lease,
            outcome,
        });
        match cell.state().after_renewal(generation, outcome) {
            WatchdogStep::Stop => return,
            WatchdogStep::Lost => {
                // As `LockGuard::renew` does when the backend refuses.
                ownership.mark_lost(LostReason::Refused);
                return;
            }
            WatchdogStep::Continue => {
                if outcome == RenewalOutcome::Renewed {
                    ownership.extend(valid_until(sent_at, lease));
                } else if ownership.lost_reason() == Some(LostReason::Expired) {
                    // Unreachable for longer than the lease: someone else may hold it now.
                    return;
                }
            }
        }
    }
}
