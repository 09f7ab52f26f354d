//! The premise every timed lock model rests on: a client that is not stalled acts
//! before its deadline — a holder finishes within its lease, a keep-alive or ping
//! arrives before the lease or session runs out, a watchdog renews in time. Time may
//! pass only while that holds; the faults are what break it.

/// Whether `deadline` is due at `now`: the next tick reaches it, so the client that
/// keeps it must act now.
pub fn due(now: u64, deadline: u64) -> bool {
    deadline <= now + 1
}

/// Whether one tick may pass at `now`: the clock is short of `horizon`, and none of
/// the deadlines the premise keeps (`kept`: per client, its deadline if it is one the
/// client keeps, as a running holder keeps its lease) is due.
pub fn may_tick(now: u64, horizon: u64, kept: impl IntoIterator<Item = Option<u64>>) -> bool {
    now < horizon && kept.into_iter().flatten().all(|d| !due(now, d))
}

/// Where the clock stops: at `horizon`, or, in a model checked for progress (a `tail`
/// of ticks past the horizon, faults over), up to `tail` later while a deadline is
/// still ahead (`ahead`), so that leases and sessions nobody keeps run out; never, in
/// a model whose clients start over ([`super::repeat::FOR_EVER`]): time passes there
/// whether or not anything waits for it, as it does in a real system.
pub fn stop(horizon: u64, tail: u64, ahead: impl FnOnce() -> bool) -> u64 {
    if tail == super::repeat::FOR_EVER || (tail > 0 && ahead()) {
        horizon + tail
    } else {
        horizon
    }
}

/// Whether faults are over at `now`: past the horizon of a model with a `tail`.
pub fn faults_over(now: u64, horizon: u64, tail: u64) -> bool {
    tail > 0 && now >= horizon
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_stops_at_a_kept_deadline_and_at_the_horizon_only() {
        assert!(due(3, 4) && !due(2, 4));
        assert!(!may_tick(3, 10, [None, Some(4)]), "a kept deadline is due");
        assert!(may_tick(2, 10, [None, Some(4)]));
        assert!(may_tick(3, 10, [None, None]), "a deadline nobody keeps");
        assert!(!may_tick(10, 10, []), "the horizon");
    }
}
