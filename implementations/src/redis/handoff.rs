//! The waiting side of the local hand-off of `redis-lua`: a task of this process queues
//! behind the local owner of the key ([`crate::handoff_queue`], one [`LocalQueue`] per
//! key and node) and waits for the holder's release to pass the key on, instead of
//! polling the server. The pass itself is the holder's release, in [`super::cas_held`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handle::KeyHandle;
use super::local_queue::{LocalQueue, Waiting};
use super::replication::{replicated, WaitReplicas};
use crate::handoff_queue::HandOff;
use crate::lease::Lease;
use crate::retry::Waited;

/// How long a queued waiter trusts the local holder before asking the server again
/// (the holder may have crashed, or kept the key past its lease).
pub const MAX_QUEUED_WAIT: Duration = Duration::from_millis(50);

/// Queues `handle` (a lock of `protocol`) behind the local owner of its key, if there is
/// one (otherwise it becomes the local owner and must ask the server), and waits for the
/// hand-off at most [`MAX_QUEUED_WAIT`] (and not past `deadline`).
pub(crate) async fn wait_turn(
    handle: &KeyHandle,
    queue: &Arc<LocalQueue>,
    protocol: &'static str,
    lease: Lease,
    deadline: Instant,
    wait_replicas: Option<WaitReplicas>,
) -> Waited {
    let Some(ttl) = lease.ttl() else {
        return Waited::AskServer;
    };
    let waiting = Waiting {
        owner: handle.owner.clone(),
        protocol,
        lease,
        ttl,
    };
    let Some(ticket) = queue.claim(&handle.owner, waiting) else {
        return Waited::AskServer;
    };
    let patience = deadline.min(Instant::now() + MAX_QUEUED_WAIT);
    let outcome = tokio::select! {
        o = ticket.turn() => o,
        _ = tokio::time::sleep_until(patience.into()) => match ticket.withdraw() {
            Ok(()) => return Waited::AskServer,
            // Picked while the timer fired: the hand-off is on its way.
            Err(ticket) => ticket.turn().await,
        },
    };
    let HandOff::Granted(guard) = outcome else {
        return Waited::AskServer;
    };
    match replicated(guard, handle, wait_replicas).await {
        Ok(g) => Waited::Granted(g),
        Err(e) => Waited::Failed(e),
    }
}
