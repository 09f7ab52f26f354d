//! The shrinker: the faults a violating run took, replayed as ever smaller schedules,
//! keeping a smaller one only when a replay of it broke again.

use super::*;
use locklab_traces::format::What;

/// The history's names for a schedule's faults, taken from the schedule's own steps:
/// a client fault is recorded twice (the nemesis's request against "any client", then
/// again by the client that takes it), a server fault once, as the nemesis carries it out.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultNames {
    client: BTreeSet<String>,
    server: BTreeSet<String>,
}

impl FaultNames {
    /// The names `steps` are recorded under.
    pub(crate) fn of<A: FamilyAction>(steps: &[Step<A>]) -> Self {
        let mut names = FaultNames::default();
        for step in steps {
            let name = step.action.name().into_owned();
            match step.action {
                Action::Client { .. } => names.client.insert(name),
                _ => names.server.insert(name),
            };
        }
        names
    }
}

/// What a checked history says about where its violation was: the faults (of those
/// `names` knows) active in its span and how many had been taken by its end (a random
/// schedule's faults are taken in order, so that many of its steps led up to it). A
/// client fault is active while it lasts; a server fault from when it fires, and the
/// last one before the span too: its effect (a clock set ahead, a node gone) is still
/// in force when the span begins — a clock jump comes before the overlap it causes.
pub(crate) fn at_violation(
    history: &History,
    report: &Report,
    names: &FaultNames,
) -> (Vec<String>, Option<usize>) {
    let Some((lo, hi)) = violation_span(history, report) else {
        return (Vec::new(), None);
    };
    let mut active: Vec<(u64, String)> = Vec::new();
    let mut in_force: Option<(u64, String)> = None;
    let mut taken = 0;
    for (_, e) in &history.events {
        if e.op != OpKind::Nemesis || e.time > hi {
            continue;
        }
        let Some(i) = e.injected() else { continue };
        let (fault, target) = (i.what.name(), i.target());
        let fault = fault.as_str();
        // A step that could not be taken is recorded skipped, as "skipped client-pause
        // c1": it is still one of the schedule's steps passed.
        let skipped = matches!(i.what, What::Skipped)
            && target
                .split_whitespace()
                .next()
                .is_some_and(|f| names.client.contains(f) || names.server.contains(f));
        let client_fault = names.client.contains(fault) && target != "any client";
        let server_fault = names.server.contains(fault);
        if client_fault || server_fault || skipped {
            taken += 1;
        }
        let ms = match i.what {
            What::Client { ms, .. } => ms.unwrap_or(0),
            What::LostReply
            | What::Protocol { .. }
            | What::Failover { .. }
            | What::Skipped
            | What::Server(_) => 0,
        };
        let end = e.time.saturating_add(ms.saturating_mul(1_000_000));
        let mut line = format!("{fault} {target} at {:.3} s", e.time as f64 / 1e9);
        if ms > 0 {
            let _ = write!(line, " for {ms} ms");
        }
        if (client_fault && end >= lo) || (server_fault && e.time >= lo) {
            active.push((e.time, line));
        } else if server_fault {
            in_force = Some((e.time, line));
        }
    }
    active.extend(in_force);
    active.sort_by_key(|(t, _)| *t);
    (active.into_iter().map(|(_, l)| l).collect(), Some(taken))
}

/// The properties `report` found violated, by name.
pub(crate) fn violated_names(report: &Report) -> Vec<String> {
    report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violation)
        .map(|c| c.property.name().to_string())
        .collect()
}

/// One replay of a schedule: `(steps, duration_ms, try)` → what it violated (empty
/// when nothing), with the seed it ran under.
pub(crate) type Replay<'a, A> =
    dyn FnMut(&[Step<A>], u64, u32) -> Result<(Vec<String>, u64), RunError> + 'a;

/// Shrinks `taken` (the random schedule's steps taken by the violation's end, `all`
/// the whole schedule) to a smallest schedule that still violates one of `wanted`,
/// in at most `budget` replays: first the steps taken, rebased to start at once; then
/// fewer steps (halves, quarters, … one at a time); then each pause or partition
/// halved while it still breaks.
pub(crate) fn shrink<A: FamilyAction>(
    taken: Vec<Step<A>>,
    all: Vec<Step<A>>,
    wanted: &[String],
    ttl_ms: u64,
    budget: u32,
    replay: &mut Replay<'_, A>,
) -> Result<Shrunk, RunError> {
    let from_faults = taken.len();
    let mut s = Shrinker {
        wanted,
        ttl_ms,
        budget,
        replays: 0,
        replay,
        last: None,
    };
    let mut current = rebase(&taken);
    if !s.breaks(&current)? {
        let whole = rebase(&all);
        if whole == current || !s.breaks(&whole)? {
            return Ok(s.report(&current, false, from_faults));
        }
        current = whole;
    }
    // Fewer faults: whole faults are dropped, each with what follows it.
    let mut faults = units(&current);
    let mut chunk = faults.len().div_ceil(2);
    while faults.len() > 1 && chunk > 0 {
        let mut i = 0;
        while i < faults.len() && faults.len() > 1 {
            let mut fewer = faults.clone();
            fewer.drain(i..(i + chunk).min(faults.len()));
            let candidate = rebase(&fewer.concat());
            if !candidate.is_empty() && s.breaks(&candidate)? {
                faults = units(&candidate);
                current = candidate;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2).min(chunk - 1).max(1);
    }
    for i in 0..current.len() {
        loop {
            let Action::Client {
                fault,
                target,
                ms,
                overstay,
            } = current[i].action.clone()
            else {
                break;
            };
            if ms / 2 < 50 {
                break;
            }
            let mut candidate = current.clone();
            candidate[i].action = Action::Client {
                fault,
                target,
                ms: ms / 2,
                overstay,
            };
            if s.breaks(&candidate)? {
                current = candidate;
            } else {
                break;
            }
        }
    }
    Ok(s.report(&current, true, from_faults))
}

struct Shrinker<'r, 'a, A> {
    wanted: &'r [String],
    ttl_ms: u64,
    budget: u32,
    replays: u32,
    replay: &'r mut Replay<'a, A>,
    /// The last schedule that broke: what it violated and under which seed.
    last: Option<(Vec<String>, u64)>,
}

impl<A: FamilyAction> Shrinker<'_, '_, A> {
    /// Whether a replay of `steps` broke one of the wanted properties, within the
    /// budget; an exhausted budget says no.
    fn breaks(&mut self, steps: &[Step<A>]) -> Result<bool, RunError> {
        for t in 0..TRIES {
            if self.replays >= self.budget {
                return Ok(false);
            }
            self.replays += 1;
            let (violated, seed) = (self.replay)(steps, duration_ms(steps, self.ttl_ms), t)?;
            if violated.iter().any(|v| self.wanted.contains(v)) {
                self.last = Some((violated, seed));
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn report(&self, steps: &[Step<A>], reproduced: bool, from_faults: usize) -> Shrunk {
        let (violated, seed) = match (&self.last, reproduced) {
            (Some((v, s)), true) => (v.clone(), Some(*s)),
            _ => (Vec::new(), None),
        };
        Shrunk {
            reproduced,
            schedule: steps.iter().map(Step::to_json).collect(),
            plan: steps.iter().map(plan_line).collect(),
            duration_ms: duration_ms(steps, self.ttl_ms),
            seed,
            violated,
            from_faults,
            replays: self.replays,
        }
    }
}

/// `steps` moved so the first starts [`LEAD_MS`] after the workload, their gaps kept.
/// Whether a random schedule's step only follows the fault before it (a restart after
/// its kill, a heal after its cut, the proxy cut that goes with a split brain's): the
/// shrinker keeps or drops it with that fault, since alone it would restart a running
/// server, heal nothing, or cut clients off for good.
fn follows<A: FamilyAction>(action: &Action<A>) -> bool {
    match action {
        Action::Restart { .. }
        | Action::Partition(_)
        | Action::HealPartition(_)
        | Action::HealSplit
        | Action::Resume(_) => true,
        Action::Family(a) => matches!(a.realises(), Realises::Heal | Realises::Steer),
        _ => false,
    }
}

/// `steps` as faults, each with the steps that follow it ([`follows`]).
pub(super) fn units<A: FamilyAction>(steps: &[Step<A>]) -> Vec<Vec<Step<A>>> {
    let mut out: Vec<Vec<Step<A>>> = Vec::new();
    for s in steps {
        match out.last_mut() {
            Some(unit) if follows(&s.action) => unit.push(s.clone()),
            _ => out.push(vec![s.clone()]),
        }
    }
    out
}

fn rebase<A: FamilyAction>(steps: &[Step<A>]) -> Vec<Step<A>> {
    let first = steps.iter().find_map(|s| match s.when {
        When::At(at) => Some(at),
        When::After { .. } => None,
    });
    let shift = first.map_or(0, |f| f.saturating_sub(LEAD_MS));
    steps
        .iter()
        .map(|s| Step {
            when: match s.when {
                When::At(at) => When::At(at - shift),
                w => w,
            },
            action: s.action.clone(),
        })
        .collect()
}

/// A replay's length: to the end of its last fault, then time for what it did to show
/// (a stalled holder's release lands after its pause).
fn duration_ms<A: FamilyAction>(steps: &[Step<A>], ttl_ms: u64) -> u64 {
    let end = steps
        .iter()
        .map(|s| {
            let at = match s.when {
                When::At(at) => at,
                When::After { delay_ms, .. } => delay_ms,
            };
            let ms = match s.action {
                Action::Client { ms, .. } => ms,
                _ => 0,
            };
            at + ms
        })
        .max()
        .unwrap_or(0);
    end + 1_000 + 2 * ttl_ms
}

/// One step as a plan line: `at 0.50 s: client-pause any client for 1200 ms`.
fn plan_line<A: FamilyAction>(s: &Step<A>) -> String {
    let when = match s.when {
        When::At(at) => format!("at {:.2} s", at as f64 / 1000.0),
        When::After {
            event, delay_ms, ..
        } => format!("{delay_ms} ms after {event}"),
    };
    let mut line = format!("{when}: {} {}", s.action.name(), s.action.target());
    match &s.action {
        Action::Client { ms, overstay, .. } if *ms > 0 => {
            let _ = write!(line, " for {ms} ms");
            if *overstay {
                line.push_str(", then steps on once another client has entered");
            }
        }
        Action::Clock { offset, .. } => {
            let _ = write!(line, " to {offset} s");
        }
        _ => {}
    }
    line
}
