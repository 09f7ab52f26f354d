//! What every spec is held to: a workload (a spec and the requests clients make of it),
//! how a history records it, a simulated run of it, the same spread over several keys,
//! and the two properties — a correct run passes, a corrupted one matches the oracle.

use std::collections::BTreeMap;

use locklab_models::spec::{Outcomes, Spec, Window};
use locklab_traces::check::{Property, Verdict};
use locklab_traces::format::{Backend, Event, Header, Phase};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::common::*;

pub type In<W> = <<W as Workload>::S as Spec>::Input;
pub type Out<W> = <<W as Workload>::S as Spec>::Output;

/// A spec and the requests clients make of it.
pub trait Workload {
    /// What the simulation runs and the oracle holds the history against.
    type S: Spec;
    fn spec(&self) -> Self::S;
    fn input(&self, client: u32, what: u8) -> In<Self>;
    /// Forgets part of an answer, the way a recorder may.
    fn blur(&self, _out: &mut Out<Self>, _what: u8) {}
    /// Changes the answer of an operation whose client recorded one.
    fn corrupt(&self, op: &mut Sim<Self::S>, how: u8);
}

/// How a history records a workload, for `check_history`.
pub trait Recorded: Workload {
    /// The header of the recorded history.
    fn header(&self) -> Header {
        Header::new("prop", Backend::Simulated)
    }
    /// Fills an operation's events; the phase of its answer.
    fn encode(&self, op: &Sim<Self::S>, inv: &mut Event, done: &mut Event) -> Phase;
    /// Properties a correct run may still violate.
    fn exempt(&self) -> Vec<Property> {
        Vec::new()
    }
}

pub fn simulate_workload<W: Workload>(
    w: &W,
    clients: u32,
    max_ops: usize,
    choices: &[u8],
    faults: Faults,
) -> Vec<Sim<W::S>> {
    simulate_with(
        &w.spec(),
        clients,
        max_ops,
        choices,
        faults,
        |c, what| w.input(c, what),
        |o, what| w.blur(o, what),
    )
}

pub fn record<W: Recorded>(w: &W, ops: &[Sim<W::S>]) -> locklab_traces::format::History {
    history_with(w.header(), events(ops, |o, i, d| w.encode(o, i, d)))
}

/// The workload's exemptions, and the critical sections if a release may land after
/// its client gave up on it: it frees that client's next hold (the same owner, to the
/// lock), and two clients believe they hold the lock.
pub fn exempt<W: Recorded>(w: &W, faults: Faults) -> Vec<Property> {
    let mut exempt = w.exempt();
    if faults.late_effects {
        exempt.push(Property::MutualExclusion);
    }
    exempt
}

/// A simulated run passes every check that is not exempt.
pub fn accepted<W: Recorded>(
    w: &W,
    clients: u32,
    choices: &[u8],
    faults: Faults,
) -> Result<(), TestCaseError> {
    let ops = simulate_workload(w, clients, 30, choices, faults);
    let h = record(w, &ops);
    let r = auto_report(&h, choices.len() % 2 == 1);
    let exempt = exempt(w, faults);
    for c in r.checks.iter().filter(|c| !exempt.contains(&c.property)) {
        prop_assert_eq!(c.verdict, Verdict::Ok, "{:#?}\n{}", c, show(&h));
    }
    Ok(())
}

/// One corruption: of an answer (`w.corrupt`); of when it arrived, moved to just after
/// the call, which can only add real-time order; or the answer lost (always harmless).
pub fn corrupt<W: Workload>(w: &W, ops: &mut [Sim<W::S>], which: usize, how: u8) {
    let Some(op) = pick(ops, which) else { return };
    match how % 8 {
        3 | 7 => op.ret = Some(op.call + 1),
        6 => {
            op.output = None;
            op.refused = false;
        }
        _ => w.corrupt(op, how / 8),
    }
}

/// A corrupted small history is accepted exactly when the oracle finds an order.
pub fn matches_oracle<W: Recorded>(
    w: &W,
    clients: u32,
    choices: &[u8],
    faults: Faults,
    which: usize,
    how: u8,
) -> Result<(), TestCaseError> {
    let mut ops = simulate_workload(w, clients, 8, choices, faults);
    corrupt(w, &mut ops, which, how);
    let h = record(w, &ops);
    let expected = oracle(&lin_ops(&w.spec(), &ops));
    let r = auto_report(&h, choices.len() % 2 == 1);
    let mut exempt = exempt(w, faults);
    if faults.resume {
        // The spec lets an operation of unknown outcome take effect after its client's
        // later ones (a request that timed out may still land): a release may free the
        // client's next hold, which the sections the history implies cannot know.
        exempt.push(Property::MutualExclusion);
    }
    let got = worst(&r, &exempt);
    prop_assert_eq!(
        got == Verdict::Ok,
        expected,
        "{:#?}\n{}",
        r.checks,
        show(&h)
    );
    Ok(())
}

/// Independent copies of a spec, one per key: the oracle's model of a history of
/// several locks or resources, where the pipeline checks key by key.
#[derive(Clone, Debug, Default)]
pub struct Keyed<S>(pub S);

impl<S: Spec> Spec for Keyed<S> {
    type State = BTreeMap<String, S::State>;
    type Input = (String, S::Input);
    type Output = S::Output;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(
        &self,
        state: &Self::State,
        (key, input): &Self::Input,
        at: Window,
    ) -> Outcomes<S::Output, Self::State> {
        let one = state.get(key).cloned().unwrap_or_else(|| self.0.init());
        self.0
            .step(&one, input, at)
            .into_iter()
            .map(|(o, next)| {
                let mut all = state.clone();
                all.insert(key.clone(), next);
                (o, all)
            })
            .collect()
    }

    fn observe(
        &self,
        before: &Self::State,
        (key, input): &Self::Input,
        at: Window,
        (predicted, mut after): (S::Output, Self::State),
        observed: &S::Output,
    ) -> Option<Self::State> {
        let one = before.get(key).cloned().unwrap_or_else(|| self.0.init());
        let next = after.remove(key)?;
        let next = self
            .0
            .observe(&one, input, at, (predicted, next), observed)?;
        after.insert(key.clone(), next);
        Some(after)
    }
}

/// A workload spread over `keys` keys (one: no key recorded at all).
#[derive(Clone, Debug)]
pub struct Keys<W> {
    pub inner: W,
    pub keys: u8,
}

impl<W: Workload> Keys<W> {
    /// The operation as the inner workload sees it.
    fn unkeyed(op: &Sim<Keyed<W::S>>) -> Sim<W::S> {
        Sim {
            client: op.client,
            input: op.input.1.clone(),
            output: op.output.clone(),
            refused: op.refused,
            call: op.call,
            ret: op.ret,
            effect: op.effect,
        }
    }
}

impl<W: Workload> Workload for Keys<W> {
    type S = Keyed<W::S>;
    fn spec(&self) -> Keyed<W::S> {
        Keyed(self.inner.spec())
    }
    fn input(&self, client: u32, what: u8) -> In<Self> {
        // A mix of `what` that the inputs' own choices leave fairly free.
        let key = ["a", "b", "c"][((what as usize * 37) >> 3) % self.keys as usize];
        (key.to_string(), self.inner.input(client, what))
    }
    fn blur(&self, out: &mut Out<Self>, what: u8) {
        self.inner.blur(out, what)
    }
    fn corrupt(&self, op: &mut Sim<Keyed<W::S>>, how: u8) {
        let mut one = Self::unkeyed(op);
        self.inner.corrupt(&mut one, how);
        op.output = one.output;
        op.refused = one.refused;
        op.ret = one.ret;
    }
}

impl<W: Recorded> Recorded for Keys<W> {
    fn header(&self) -> Header {
        self.inner.header()
    }
    fn encode(&self, op: &Sim<Keyed<W::S>>, inv: &mut Event, done: &mut Event) -> Phase {
        let phase = self.inner.encode(&Self::unkeyed(op), inv, done);
        if self.keys > 1 {
            inv.key = Some(op.input.0.as_str().into());
        }
        phase
    }
    fn exempt(&self) -> Vec<Property> {
        self.inner.exempt()
    }
}
