//! A random schedule: the faults of the kinds asked for, one at a time, at times and
//! lengths drawn from the seed.

use super::*;

/// The run's shape, for drawing a schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Run length (ms).
    pub(crate) duration_ms: u64,
    /// The lease (ms).
    pub(crate) ttl_ms: u64,
    /// Time inside a critical section (ms).
    pub(crate) work_ms: u64,
    /// Clients: a crash takes one for good, so at most all but one crash.
    pub(crate) clients: usize,
}

/// A server fault as the family makes it: `(kind, nth of its kind, pick)` → its steps,
/// each with its delay (ms) after the fault's time: one step, or a kill and the
/// restart that follows it.
pub(crate) type ServerFault<'a, A> = dyn Fn(Fault, u32, u64) -> Option<Vec<(u64, Action<A>)>> + 'a;

/// A random schedule of `kinds` over `shape`, one fault at a time, drawn from `seed`:
/// gaps of one to three rounds of lease and work (at least 0.4 s) between them, pauses
/// and partitions from half a lease to three leases — some shorter than the lease,
/// harmless to a lease lock, some far past it — each followed by a lease of the run;
/// a server fault made by `server`.
pub(crate) fn generate<A: FamilyAction>(
    kinds: &[Fault],
    seed: u64,
    shape: Shape,
    server: &ServerFault<'_, A>,
) -> Vec<Step<A>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x7261_6e64_6f6d_6e65);
    let round = (2 * (shape.ttl_ms + shape.work_ms)).max(400);
    let shortest = (shape.ttl_ms / 2).max(50);
    let longest = 3 * shape.ttl_ms.max(100);
    let mut crashes_left = shape.clients.saturating_sub(1);
    // The reaper stops for good: a second stop would find nothing to stop.
    let mut reaper_alive = true;
    let mut drawn: Vec<(Fault, u32)> = Vec::new();
    // Kinds the servers can take no more of (every replica promoted).
    let mut spent: Vec<Fault> = Vec::new();
    let mut steps = Vec::new();
    // The first fault falls where at least one fits.
    let first_room = shape
        .duration_ms
        .saturating_sub(LEAD_MS + shortest + shape.ttl_ms)
        .max(1);
    let mut at = LEAD_MS + rng.random_range(0..round.min(first_room));
    // Each fault leaves a lease after it to show what it did.
    while at + shortest + shape.ttl_ms < shape.duration_ms {
        let usable: Vec<Fault> = kinds
            .iter()
            .copied()
            .filter(|k| *k != Fault::Crash || crashes_left > 0)
            .filter(|k| *k != Fault::ReaperDies || reaper_alive)
            .filter(|k| !spent.contains(k))
            .collect();
        if usable.is_empty() {
            break;
        }
        let kind = usable[rng.random_range(0..usable.len())];
        let ms = match kind {
            Fault::Pause | Fault::Partition => {
                let room = shape.duration_ms - shape.ttl_ms - at;
                rng.random_range(shortest..=longest.min(room))
            }
            _ => 0,
        };
        if kind == Fault::Crash {
            crashes_left -= 1;
        }
        if kind == Fault::ReaperDies {
            reaper_alive = false;
        }
        let action = if CLIENT_KINDS.contains(&kind) {
            Action::client(kind, Target::AnyClient, ms)
        } else {
            let nth = match drawn.iter_mut().find(|(f, _)| *f == kind) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    drawn.push((kind, 0));
                    0
                }
            };
            let pick = rng.random::<u64>();
            let Some(actions) = server(kind, nth, pick).filter(|a| !a.is_empty()) else {
                // The servers take no more of it: draw again from the rest, at the
                // same time.
                spent.push(kind);
                continue;
            };
            // A restart follows its kill: the next fault comes after both.
            let last = actions.iter().map(|(d, _)| *d).max().unwrap_or(0);
            steps.extend(actions.into_iter().map(|(delay, action)| Step {
                when: When::At(at + delay),
                action,
            }));
            at += last + rng.random_range(round / 2..=round * 3 / 2);
            continue;
        };
        steps.push(Step {
            when: When::At(at),
            action,
        });
        at += ms + rng.random_range(round / 2..=round * 3 / 2);
    }
    steps
}
