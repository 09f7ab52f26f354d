//! Shared by the property tests: a simulator that runs a spec under random concurrency
//! (answers lost after the effect, timeouts before it, requests that take effect after
//! their client gave up, operations that never return), a brute-force oracle, and the
//! encoding of simulated operations as locklab events.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use locklab_traces::format::Backend;
use std::collections::HashSet;
use std::sync::Arc;

use locklab_models::spec::{
    LockInput, LockOutput, LockSpec, RegisterInput, RegisterOutput, RegisterSpec, Spec, Window,
};
use locklab_traces::check::linear::{successors, LinOp};
use locklab_traces::check::{check_history, Options, Property, Report, Selection, Verdict};
use locklab_traces::format::{Event, Header, History, OpKind, Phase, Process, ResourceSpec};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Cases per property: `PROPTEST_CASES` when set (the long run), else `default`. An
/// explicit `cases` in a config would otherwise shadow the variable.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A proptest config that replays and saves failing cases beside the test file: the
/// default looks for a lib.rs above it, finds none under tests/, and then neither
/// replays nor saves them.
pub fn config(default_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default_cases),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// One simulated operation.
#[derive(Clone, Debug)]
pub struct Sim<S: Spec> {
    /// Who invoked it.
    pub client: u32,
    /// What was asked.
    pub input: S::Input,
    /// The answer the client got (`None`: none yet, or it was lost).
    pub output: Option<S::Output>,
    /// The spec allows it no outcome (Knossos's mutex) and the service said `fail`:
    /// nothing changed.
    pub refused: bool,
    /// When it was invoked.
    pub call: u64,
    /// When the client recorded an outcome (`None`: it never did).
    pub ret: Option<u64>,
    /// When it took effect (`None`: it never did).
    pub effect: Option<u64>,
}

impl<S: Spec> Sim<S> {
    /// The client recorded an answer the service gave: `ok` or `fail`.
    pub fn answered(&self) -> bool {
        self.ret.is_some() && (self.output.is_some() || self.refused)
    }
}

/// The faults a simulation injects.
#[derive(Clone, Copy, Debug)]
pub struct Faults {
    /// One answer in `lose_answer` is lost after the effect: the client records `info`
    /// (0: never).
    pub lose_answer: u8,
    /// One wait in `time_out` ends before the effect: the client records `info` (0:
    /// never).
    pub time_out: u8,
    /// Whether a request whose client timed out may still take effect later (it was
    /// only delayed), else it never does.
    pub late_effects: bool,
    /// Whether a client goes on after `info`, as a client does after a timeout; else it
    /// stops, as a crashed process does.
    pub resume: bool,
    /// At most this many answers are lost or timed out. An operation of unknown outcome
    /// may take effect at any later point, so each one multiplies the orders a search
    /// has to consider: a dozen on one lock take the search seconds, a score minutes. A
    /// handful makes every shape.
    pub max_infos: usize,
}

impl Faults {
    /// Whether the fault that strikes one time in `one_in` strikes at `x`, with `infos`
    /// struck so far.
    pub fn strike(&self, one_in: u8, x: u8, infos: &mut usize) -> bool {
        let hit = *infos < self.max_infos && one_in != 0 && x.is_multiple_of(one_in);
        *infos += usize::from(hit);
        hit
    }
}

impl Faults {
    /// The first property tests' faults: one answer in 17 lost, then the client stops.
    pub const CLASSIC: Faults = Faults {
        lose_answer: 17,
        time_out: 0,
        late_effects: false,
        resume: false,
        max_infos: usize::MAX,
    };
}

/// Every combination of faults, each sometimes off.
pub fn faults() -> impl Strategy<Value = Faults> {
    (
        prop::sample::select(vec![0u8, 5, 17]),
        prop::sample::select(vec![0u8, 4, 9]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lose_answer, time_out, late_effects, resume)| Faults {
            lose_answer,
            time_out,
            late_effects,
            resume,
            max_infos: 6,
        })
}

/// Runs `spec` with `clients` clients and the first property tests' faults: each step
/// one client invokes, takes effect, or returns, as `choices` dictate.
pub fn simulate<S: Spec>(
    spec: &S,
    clients: u32,
    max_ops: usize,
    choices: &[u8],
    pick_input: impl FnMut(u32, u8) -> S::Input,
) -> Vec<Sim<S>> {
    simulate_with(
        spec,
        clients,
        max_ops,
        choices,
        Faults::CLASSIC,
        pick_input,
        |_, _| {},
    )
}

/// Runs `spec` with `clients` clients: each step (two bytes of `choices`: who, what)
/// one client invokes, takes effect, or returns, or a request its client gave up on
/// takes effect. `blur` forgets part of an answer the way a recorder may (a token, a
/// version). An operation the spec allows no outcome is refused or waits.
pub fn simulate_with<S: Spec>(
    spec: &S,
    clients: u32,
    max_ops: usize,
    choices: &[u8],
    faults: Faults,
    mut pick_input: impl FnMut(u32, u8) -> S::Input,
    mut blur: impl FnMut(&mut S::Output, u8),
) -> Vec<Sim<S>> {
    #[derive(Clone, Copy)]
    enum C {
        Idle,
        Invoked(usize),
        Effected(usize),
        Stopped,
    }
    let mut state = spec.init();
    let mut cs: Vec<C> = vec![C::Idle; clients as usize];
    let mut ops: Vec<Sim<S>> = Vec::new();
    // Requests whose client gave up on them, still on their way to the service.
    let mut in_flight: Vec<usize> = Vec::new();
    let mut infos = 0;
    let mut t = 1000u64;
    for pair in choices.chunks(2) {
        let (who, what) = (
            pair[0] as usize % clients as usize,
            *pair.get(1).unwrap_or(&0),
        );
        // The bits of the first byte that `who` leaves alone (for 1, 2 or 4 clients).
        let fate = pair[0] / 4;
        t += 1000 * (1 + (what % 3) as u64);
        if faults.late_effects && fate >= 56 && !in_flight.is_empty() {
            let i = in_flight.swap_remove(what as usize % in_flight.len());
            let mut outs = spec.step(&state, &ops[i].input, Window::at(t));
            if !outs.is_empty() {
                state = outs.swap_remove(what as usize % outs.len()).1;
                ops[i].effect = Some(t);
            }
            continue;
        }
        let after_info = if faults.resume { C::Idle } else { C::Stopped };
        match cs[who] {
            C::Idle if ops.len() < max_ops => {
                ops.push(Sim {
                    client: who as u32,
                    input: pick_input(who as u32, what),
                    output: None,
                    refused: false,
                    call: t,
                    ret: None,
                    effect: None,
                });
                cs[who] = C::Invoked(ops.len() - 1);
            }
            C::Invoked(i) if faults.strike(faults.time_out, fate, &mut infos) => {
                ops[i].ret = Some(t);
                if faults.late_effects {
                    in_flight.push(i);
                }
                cs[who] = after_info;
            }
            C::Invoked(i) => {
                let mut outs = spec.step(&state, &ops[i].input, Window::at(t));
                if outs.is_empty() {
                    // Refused, or it waits (a blocked acquire) and tries again later.
                    if what % 3 == 0 {
                        ops[i].refused = true;
                        cs[who] = C::Effected(i);
                    }
                } else {
                    let (mut o, s) = outs.swap_remove(what as usize % outs.len());
                    blur(&mut o, what);
                    state = s;
                    ops[i].output = Some(o);
                    ops[i].effect = Some(t);
                    cs[who] = C::Effected(i);
                }
            }
            C::Effected(i) => {
                ops[i].ret = Some(t);
                if faults.strike(faults.lose_answer, what, &mut infos) {
                    // The answer is lost: the client records an unknown outcome.
                    ops[i].output = None;
                    ops[i].refused = false;
                    cs[who] = after_info;
                } else {
                    cs[who] = C::Idle;
                }
            }
            _ => {}
        }
    }
    ops
}

/// Brute force: is there an order of `ops`, respecting real time, that the spec
/// accepts? An operation of unknown outcome may also never have taken effect.
pub fn oracle<S: Spec>(ops: &[LinOp<S>]) -> bool {
    fn go<S: Spec>(
        ops: &[LinOp<S>],
        left: u64,
        states: Vec<S::State>,
        seen: &mut HashSet<(u64, Vec<S::State>)>,
    ) -> bool {
        if left == 0 {
            return true;
        }
        if !seen.insert((left, states.clone())) {
            return false;
        }
        let horizon = (0..ops.len())
            .filter(|i| left & (1 << i) != 0)
            .map(|i| ops[i].ret.unwrap_or(u64::MAX))
            .min()
            .unwrap_or(u64::MAX);
        (0..ops.len())
            .filter(|i| left & (1 << i) != 0 && ops[*i].call <= horizon)
            .any(|i| {
                let rest = left & !(1 << i);
                let next = successors(&states, &ops[i]);
                (!next.is_empty() && go(ops, rest, next.to_vec(), seen))
                    || (ops[i].output.is_none() && go(ops, rest, states.clone(), seen))
            })
    }
    assert!(ops.len() <= 64, "the oracle is for small histories");
    let all = if ops.len() == 64 {
        u64::MAX
    } else {
        (1u64 << ops.len()) - 1
    };
    go(ops, all, Vec::new(), &mut HashSet::new())
}

/// The operations as the oracle sees them. A refusal the client recorded did not
/// happen and is left out, as Knossos drops a `:fail`.
pub fn lin_ops<S: Spec>(spec: &S, ops: &[Sim<S>]) -> Vec<LinOp<S>> {
    let spec = Arc::new(spec.clone());
    ops.iter()
        .filter(|o| !(o.refused && o.ret.is_some()))
        .map(|o| {
            let known = o.output.is_some() && o.ret.is_some();
            LinOp {
                spec: spec.clone(),
                input: o.input.clone(),
                output: if known { o.output.clone() } else { None },
                call: o.call,
                ret: if known { o.ret } else { None },
                client: o.client,
                line: 0,
            }
        })
        .collect()
}

/// A history of `events` with a header of the given resource.
pub fn history(events: Vec<Event>, resource: Option<ResourceSpec>) -> History {
    let mut header = Header::new("prop", Backend::Simulated);
    header.resource = resource;
    history_with(header, events)
}

/// A history of `events` under `header`.
pub fn history_with(header: Header, events: Vec<Event>) -> History {
    History {
        source: "prop".into(),
        header,
        events: events
            .into_iter()
            .enumerate()
            .map(|(i, e)| (i + 2, e))
            .collect(),
        warnings: vec![],
    }
}

/// Events for simulated operations, sorted by time. `encode` fills the invocation and
/// the completion of an answered operation and says which phase the answer is; a
/// refusal is a `fail`, an answer the client never got an `info`.
pub fn events<S: Spec>(
    ops: &[Sim<S>],
    mut encode: impl FnMut(&Sim<S>, &mut Event, &mut Event) -> Phase,
) -> Vec<Event> {
    let mut out = Vec::new();
    for op in ops {
        let process = Process::Client(op.client);
        let mut inv = Event::new(process, OpKind::Read, Phase::Invoke, op.call);
        let mut done = Event::new(process, OpKind::Read, Phase::Ok, 0);
        let phase = encode(op, &mut inv, &mut done);
        let kind = inv.op;
        out.push(inv);
        let Some(r) = op.ret else { continue };
        if op.refused {
            let mut fail = Event::new(process, kind, Phase::Fail, r);
            fail.key = done.key;
            out.push(fail);
        } else if op.output.is_some() {
            done.op = kind;
            done.phase = phase;
            done.time = r;
            out.push(done);
        } else {
            let mut info = Event::new(process, kind, Phase::Info, r);
            info.note = Some("crashed".into());
            out.push(info);
        }
    }
    out.sort_by_key(|e| (e.time, e.phase != Phase::Invoke));
    out
}

pub fn register_input(_: u32, what: u8) -> RegisterInput {
    match what % 3 {
        0 => RegisterInput::Read,
        1 => RegisterInput::Write((what / 3 % 3) as i64),
        _ => RegisterInput::Cas {
            from: (what / 3 % 3) as i64,
            to: (what / 9 % 3) as i64,
        },
    }
}

/// Fills a register operation's events; the phase of its answer.
pub fn encode_register(
    input: &RegisterInput,
    output: &Option<RegisterOutput>,
    inv: &mut Event,
    done: &mut Event,
) -> Phase {
    match input {
        RegisterInput::Read => inv.op = OpKind::Read,
        RegisterInput::Write(v) => {
            inv.op = OpKind::Write;
            inv.value = Some((*v).into());
        }
        RegisterInput::Cas { from, to } => {
            inv.op = OpKind::Cas;
            inv.value = Some(serde_json::json!([from, to]));
        }
    }
    match output {
        Some(RegisterOutput::Value(v)) => {
            done.value = Some(v.map_or(serde_json::Value::Null, Into::into));
            Phase::Ok
        }
        Some(RegisterOutput::CasFailed) => Phase::Fail,
        _ => Phase::Ok,
    }
}

pub fn register_events(ops: &[Sim<RegisterSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        encode_register(&op.input, &op.output, inv, done)
    })
}

pub fn lock_input(client: u32, what: u8) -> LockInput {
    match what % 4 {
        0 | 1 => LockInput::Acquire {
            owner: client as u64,
            lease: Some(1000 * (5 + (what as u64 % 7))),
        },
        2 => LockInput::Release {
            owner: client as u64,
        },
        _ => LockInput::Renew {
            owner: client as u64,
            lease: 6000,
        },
    }
}

/// Fills a lock operation's events (the owner only when it is not the process, as a
/// recorder writes it); the phase of its answer.
pub fn encode_lock(
    client: u32,
    input: &LockInput,
    output: &Option<LockOutput>,
    inv: &mut Event,
    done: &mut Event,
) -> Phase {
    match input {
        LockInput::Acquire { lease, .. } => {
            inv.op = OpKind::Acquire;
            inv.lease_ns = *lease;
        }
        LockInput::Release { .. } => inv.op = OpKind::Release,
        LockInput::Renew { lease, .. } => {
            inv.op = OpKind::Renew;
            inv.lease_ns = Some(*lease);
        }
    }
    let owner = input.owner();
    if owner != client as u64 {
        inv.owner = Some(owner);
    }
    match output {
        Some(LockOutput::Granted(t)) => {
            done.token = *t;
            Phase::Ok
        }
        Some(LockOutput::Busy) | Some(LockOutput::NotHeld) => Phase::Fail,
        _ => Phase::Ok,
    }
}

pub fn lock_events(ops: &[Sim<LockSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        encode_lock(op.client, &op.input, &op.output, inv, done)
    })
}

pub fn report(h: &History, selection: Selection) -> Report {
    check_history(
        h,
        &Options {
            selection,
            ..Options::default()
        },
    )
    .expect("well-formed")
}

/// Every check the history calls for (`Auto`), with or without a time limit: with one
/// (as `check-history` has by default), the searches take the path that can be
/// abandoned, a slice at a time on a pool of workers; without, the plain one. A limit
/// of a minute never runs out on these histories, so the verdicts must be the same.
pub fn auto_report(h: &History, timed: bool) -> Report {
    check_history(
        h,
        &Options {
            timeout: timed.then_some(std::time::Duration::from_secs(60)),
            ..Options::default()
        },
    )
    .expect("well-formed")
}

pub fn verdict_of(h: &History, selection: Selection) -> Verdict {
    report(h, selection).verdict
}

pub fn verdict(h: &History) -> Verdict {
    report(h, Selection::Auto).verdict
}

/// The worst verdict of the checks not about `exempt` properties.
pub fn worst(report: &Report, exempt: &[Property]) -> Verdict {
    report
        .checks
        .iter()
        .filter(|c| !exempt.contains(&c.property))
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Ok)
}

/// The `which`-th operation (cyclically) whose client recorded an answer.
pub fn pick<S: Spec>(ops: &mut [Sim<S>], which: usize) -> Option<&mut Sim<S>> {
    let known: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].answered()).collect();
    let i = *known.get(which % known.len().max(1))?;
    ops.get_mut(i)
}

/// Changes one answer: a read value, a CAS result.
pub fn corrupt_register_answer(output: &mut Option<RegisterOutput>, how: u8) {
    *output = match (&*output, how % 2) {
        (Some(RegisterOutput::Value(v)), 0) => {
            Some(RegisterOutput::Value(Some(v.unwrap_or(0) + 1)))
        }
        (Some(RegisterOutput::Value(_)), _) => Some(RegisterOutput::Value(None)),
        (Some(RegisterOutput::CasOk), _) => Some(RegisterOutput::CasFailed),
        (Some(RegisterOutput::CasFailed), _) => Some(RegisterOutput::CasOk),
        (o, _) => o.clone(),
    };
}

pub fn corrupt_register(ops: &mut [Sim<RegisterSpec>], which: usize, how: u8) {
    if let Some(op) = pick(ops, which) {
        corrupt_register_answer(&mut op.output, how);
    }
}

/// Changes one answer: a grant into a refusal, a token, a refusal into success.
pub fn corrupt_lock_answer(input: &LockInput, output: &mut Option<LockOutput>, how: u8) {
    *output = match (&*output, how % 2) {
        (Some(LockOutput::Granted(_)), 0) => Some(LockOutput::Busy),
        (Some(LockOutput::Granted(Some(t))), _) => {
            Some(LockOutput::Granted(Some(t.saturating_sub(1))))
        }
        (Some(LockOutput::Busy), _) => Some(LockOutput::Granted(None)),
        (Some(LockOutput::NotHeld), _) if matches!(input, LockInput::Renew { .. }) => {
            Some(LockOutput::Renewed)
        }
        (Some(LockOutput::NotHeld), _) => Some(LockOutput::Released),
        (Some(LockOutput::Released | LockOutput::Renewed), _) => Some(LockOutput::NotHeld),
        (o, _) => o.clone(),
    };
}

pub fn corrupt_lock(ops: &mut [Sim<LockSpec>], which: usize, how: u8) {
    if let Some(op) = pick(ops, which) {
        corrupt_lock_answer(&op.input, &mut op.output, how);
    }
}

/// The events of a history, one a line, for failure messages.
pub fn show(h: &History) -> String {
    let mut out = String::new();
    for (line, e) in &h.events {
        let mut extra = String::new();
        if let Some(v) = &e.value {
            extra += &format!(" value={v}");
        }
        if let Some(t) = e.token {
            extra += &format!(" token={t}");
        }
        if let Some(o) = e.owner {
            extra += &format!(" owner={o}");
        }
        if let Some(l) = e.lease_ns {
            extra += &format!(" lease={l}");
        }
        if let Some(k) = &e.key {
            extra += &format!(" key={k}");
        }
        out += &format!(
            "{line:>3} t={:>6} {} {:?} {:?}{extra}\n",
            e.time, e.process, e.op, e.phase
        );
    }
    out
}

/// `n` values of `strategy`, the same ones every run: for tests that count what a
/// sample covers.
pub fn sample<S: Strategy>(strategy: S, n: usize) -> Vec<S::Value> {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).expect("a value").current())
        .collect()
}
