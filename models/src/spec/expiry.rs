//! Leases and sessions that run out: the timers of etcd and ZooKeeper, each with a
//! deadline [`Window`], whose expiry deletes what hangs on them. A request taking
//! effect during a window that reaches a deadline may find the timer expired or not,
//! so a spec's step lists an outcome per set of timers that may have run out first.

use super::{Outcomes, Window};

/// Above this many timers whose expiry a window leaves open, only expiry in deadline
/// order is listed (each timer's keep-alives are serial, so this is the usual case).
const MAX_OPEN: usize = 6;

/// The timers among `timers` (`(id, deadline)`) whose deadline has surely passed at
/// `t`: what a server expires before it runs a request at `t`.
pub fn due<Id>(timers: impl IntoIterator<Item = (Id, Window)>, t: u64) -> Vec<Id> {
    timers
        .into_iter()
        .filter(|(_, d)| d.passed_by(t))
        .map(|(id, _)| id)
        .collect()
}

/// Every outcome of a request taking effect during `at` on `base`, where the timers
/// surely due at `at.lo` have already expired: for each set of `timers` whose deadline
/// `at` reaches, those `expire`d, then `exec` run at `at.hi`. Equal outcomes are
/// listed once; the set where none expired comes first.
pub fn outcomes<S, R, Id>(
    base: S,
    timers: impl IntoIterator<Item = (Id, Window)>,
    at: Window,
    expire: impl Fn(&mut S, Id),
    exec: impl Fn(&mut S, u64) -> R,
) -> Outcomes<R, S>
where
    S: Clone + PartialEq,
    R: PartialEq,
    Id: Copy + Ord,
{
    let mut open: Vec<(Window, Id)> = timers
        .into_iter()
        .filter(|(_, d)| d.may_pass_in(at))
        .map(|(id, d)| (d, id))
        .collect();
    open.sort();
    let sets: Vec<Vec<Id>> = if open.len() <= MAX_OPEN {
        (0u32..1 << open.len())
            .map(|m| {
                (0..open.len())
                    .filter(|i| m & (1 << i) != 0)
                    .map(|i| open[i].1)
                    .collect()
            })
            .collect()
    } else {
        (0..=open.len())
            .map(|n| open[..n].iter().map(|o| o.1).collect())
            .collect()
    };
    let mut out: Outcomes<R, S> = Outcomes::new();
    for expired in sets {
        let mut next = base.clone();
        for id in expired {
            expire(&mut next, id);
        }
        let reply = exec(&mut next, at.hi);
        if !out.iter().any(|(r, s)| *r == reply && *s == next) {
            out.push((reply, next));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expiring timer `id` removes it; the request answers with what is left.
    fn run(live: Vec<u8>, timers: &[(u8, Window)], at: Window) -> Vec<Vec<u8>> {
        let remove = |s: &mut Vec<u8>, id: u8| s.retain(|x| *x != id);
        outcomes(live, timers.to_vec(), at, remove, |s, _| s.clone())
            .into_iter()
            .map(|(reply, _)| reply)
            .collect()
    }

    #[test]
    fn a_window_reaching_a_deadline_lists_the_timer_both_expired_and_not() {
        let timers = [(1, Window::at(5)), (2, Window::at(9))];
        assert_eq!(run(vec![1, 2], &timers, Window::at(3)), [vec![1, 2]]);
        let both = run(vec![1, 2], &timers, Window::between(4, 6));
        assert_eq!(both, [vec![1, 2], vec![2]], "none expired first");
        assert_eq!(due(timers, 9), [1, 2]);
    }
}
