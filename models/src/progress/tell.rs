//! A lasso told as a story: the stem's steps, then the cycle's, marked as repeating.

use std::fmt::Debug;
use std::hash::Hash;

use serde::Serialize;

use crate::checkable::{story_step, StoryStep};

use super::{Class, Progress, Promise};

/// A lasso in the model's graph: its first node, then each step as (the node it
/// reaches, the step's fairness class).
pub(super) struct Path {
    pub(super) start: u32,
    pub(super) stem: Vec<(u32, Option<Class>)>,
    pub(super) cycle: Vec<(u32, Option<Class>)>,
}

/// A behaviour that breaks a progress promise for ever, told.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Lasso {
    /// The promise it breaks.
    pub promise: Promise,
    /// The client that waits for ever.
    pub client: usize,
    /// The state before the first step.
    pub initial: Vec<String>,
    /// The stem's steps, then the cycle's.
    pub steps: Vec<StoryStep>,
    /// How many of `steps` are the stem: the cycle starts from the state after step
    /// `stem` and comes back to it; it is empty where nothing can happen any more.
    pub stem: usize,
    /// Why it never ends, in words.
    pub closing: String,
}

impl Lasso {
    /// The cycle's steps.
    pub fn cycle(&self) -> &[StoryStep] {
        &self.steps[self.stem..]
    }

    /// Its shape in a few words: `c0 waits for ever (7 steps, then nothing more can
    /// happen)`, or `(6 steps, then 2 repeating for ever)`; a FIFO story is finite:
    /// `c1 passed over (5 steps)`.
    pub fn shape(&self) -> String {
        if self.promise == Promise::Fifo {
            return format!("c{} passed over ({} steps)", self.client, self.steps.len());
        }
        let then = match self.cycle().len() {
            0 => "nothing more can happen".to_string(),
            n => format!("{n} repeating for ever"),
        };
        format!(
            "c{} waits for ever ({} steps, then {then})",
            self.client, self.stem
        )
    }
}

impl std::fmt::Display for Lasso {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.promise == Promise::Fifo {
            writeln!(
                f,
                "Counterexample for {} ({} steps, shortest):",
                self.promise,
                self.steps.len()
            )?;
        } else {
            writeln!(
                f,
                "Lasso for {} ({} step{} to the cycle, {} in it):",
                self.promise,
                self.stem,
                if self.stem == 1 { "" } else { "s" },
                self.cycle().len()
            )?;
        }
        writeln!(f, "  0. initial state")?;
        for l in &self.initial {
            writeln!(f, "       {l}")?;
        }
        for st in &self.steps {
            if st.n == self.stem + 1 && self.promise != Promise::Fifo {
                writeln!(f, "  ↻ from here on, for ever:")?;
            }
            let fault = if st.fault { "  ⚡ FAULT" } else { "" };
            writeln!(f, "  {}. {}{fault}", st.n, st.action)?;
            for l in &st.state {
                writeln!(f, "       {l}")?;
            }
        }
        writeln!(f, "  Violated: {}. {}", self.promise, self.closing)
    }
}

/// What the cycle of a lasso shows of the client that waits and of the others.
#[derive(Default)]
struct CycleFacts {
    /// The other clients granted the lock in it, in order of first grant.
    granted: Vec<usize>,
    /// The waiting client's own steps taken in it.
    own_steps: usize,
    /// The cycle's states where a step of the waiting client's own program was possible.
    possible: usize,
    /// The cycle's states.
    states: usize,
}

impl CycleFacts {
    /// Notes the cycle's step `a` from `prev` to `next`, for client `c`.
    fn note<M>(&mut self, model: &M, c: usize, prev: &M::State, a: &M::Action, next: &M::State)
    where
        M: Progress,
        M::State: Clone + Hash + Eq + Debug,
        M::Action: Clone + Debug,
    {
        let own = model.fairness(a) == Some(super::client(c));
        self.own_steps += usize::from(own);
        self.states += 1;
        let mut actions = Vec::new();
        model.actions(prev, &mut actions);
        let possible = actions.into_iter().any(|b| {
            model.fairness(&b) == Some(super::client(c)) && model.next_state(prev, b).is_some()
        });
        self.possible += usize::from(possible);
        let (before, after) = (model.stages(prev), model.stages(next));
        for (d, (&x, &y)) in before.iter().zip(&after).enumerate() {
            if d != c && !x.holds() && y.holds() && !self.granted.contains(&d) {
                self.granted.push(d);
            }
        }
    }
}

/// Tells `path` in `model`'s words.
pub(super) fn tell<M>(
    model: &M,
    node_of: &dyn Fn(&M::State) -> Option<u32>,
    promise: Promise,
    client: usize,
    path: &Path,
) -> Lasso
where
    M: Progress,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    // Replayed from a concrete initial state: at each step, the action whose
    // successor the graph stores as the step's target (the same action where the
    // model reduces nothing, its counterpart on renamed nodes where it does).
    let mut steps = Vec::new();
    let mut actions = Vec::new();
    let first = model
        .init_states()
        .into_iter()
        .find(|s| node_of(s) == Some(path.start));
    let initial = first
        .as_ref()
        .map(|s| model.describe_state(s))
        .unwrap_or_default();
    // What the cycle shows of the waiting client and the others, for its closing.
    let mut seen = CycleFacts::default();
    let mut now = first;
    for &(to, class) in path.stem.iter().chain(&path.cycle) {
        let Some(prev) = now.take() else {
            break;
        };
        actions.clear();
        model.actions(&prev, &mut actions);
        let taken = actions.iter().find_map(|a| {
            if model.fairness(a) != class {
                return None;
            }
            let next = model.next_state(&prev, a.clone())?;
            (node_of(&next) == Some(to)).then_some((a, next))
        });
        let Some((a, next)) = taken else {
            break;
        };
        if steps.len() >= path.stem.len() {
            seen.note(model, client, &prev, a, &next);
        }
        steps.push(story_step(model, steps.len() + 1, &prev, a, &next));
        now = Some(next);
    }
    let stem = path.stem.len();
    let cycle: Vec<&str> = steps[stem.min(steps.len())..]
        .iter()
        .map(|s| s.action.as_str())
        .collect();
    let waits = match promise {
        Promise::EventuallyFree => {
            let fault = steps[..stem.min(steps.len())]
                .iter()
                .rev()
                .find(|s| s.fault)
                .map_or(String::new(), |s| format!(" (step {}: {})", s.n, s.action));
            format!(
                "A fault struck{fault} and nobody has been granted the lock since: c{client} waits for ever"
            )
        }
        Promise::StarvationFree => {
            let others = match seen.granted.as_slice() {
                [] => String::new(),
                [c] => format!(", while c{c} takes the lock again and again"),
                cs => format!(
                    ", while {} take turns with it",
                    cs.iter()
                        .map(|c| format!("c{c}"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            };
            let why = if seen.own_steps > 0 {
                format!(
                    " ({} of its own steps in every round: it tries, and finds the lock taken each \
                     time)",
                    seen.own_steps
                )
            } else if seen.possible > 0 {
                format!(
                    " (its request could succeed in {} of the round's {} states, the moments the \
                     lock is free, but never in all of them: weak fairness owes a step only when \
                     it stays possible, and each time another client's step came first — the lock \
                     service keeps no order of requests)",
                    seen.possible, seen.states
                )
            } else {
                String::new()
            };
            format!("c{client} keeps asking and is never granted{others}{why}")
        }
        // Its caller words it (who was granted over whom).
        Promise::Fifo => String::new(),
    };
    let list = if cycle.len() <= 4 {
        format!(" ({})", cycle.join("; "))
    } else {
        String::new()
    };
    let from = match stem {
        0 => "From the start".to_string(),
        n => format!("From step {n} on"),
    };
    let closing = if cycle.is_empty() {
        format!(
            "{waits}. {from} nothing more can happen: no step is possible and no \
             deadline is ahead that will come (one a live heartbeat keeps moves on with \
             time), so neither fairness nor time can help."
        )
    } else {
        format!(
            "{waits}. {from}, the last {} step{} repeat for ever{list}, and that \
             is a fair run: every step the system owes (the clock, the servers, each client's \
             own steps) is taken in it or is not always possible.",
            cycle.len(),
            if cycle.len() == 1 { "" } else { "s" },
        )
    };
    Lasso {
        promise,
        client,
        initial,
        steps,
        stem,
        closing,
    }
}
