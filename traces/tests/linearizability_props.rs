//! Property tests of the whole pipeline (history → pairing → porcupine-rs search):
//! - histories produced by running a spec under random concurrency are accepted;
//! - after a random corruption of one answer, a small history is rejected exactly when
//!   a brute-force search over every order says it is not linearizable.

use std::collections::HashSet;
use std::sync::Arc;

use locklab_models::spec::{
    LockInput, LockOutput, LockSpec, RegisterInput, RegisterOutput, RegisterSpec, Spec, Window,
};
use locklab_traces::check::linear::{successors, LinOp};
use locklab_traces::check::{check_history, Options, Selection, Verdict};
use locklab_traces::format::{Event, Header, History, OpKind, Phase, Process, ResourceSpec};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// One simulated operation.
#[derive(Clone, Debug)]
struct Sim<S: Spec> {
    client: u32,
    input: S::Input,
    output: Option<S::Output>,
    call: u64,
    ret: Option<u64>,
}

/// Runs `spec` with `clients` clients: each step one client invokes, takes effect, or
/// returns, as `choices` dictate. Some operations crash (unknown outcome) or never return.
fn simulate<S: Spec>(
    spec: &S,
    clients: u32,
    max_ops: usize,
    choices: &[u8],
    mut pick_input: impl FnMut(u32, u8) -> S::Input,
) -> Vec<Sim<S>> {
    #[derive(Clone, Copy)]
    enum C {
        Idle,
        Invoked(usize),
        Effected(usize),
        Crashed,
    }
    let mut state = spec.init();
    let mut cs: Vec<C> = vec![C::Idle; clients as usize];
    let mut ops: Vec<Sim<S>> = Vec::new();
    let mut t = 1000u64;
    for pair in choices.chunks(2) {
        let (who, what) = (
            pair[0] as usize % clients as usize,
            *pair.get(1).unwrap_or(&0),
        );
        t += 1000 * (1 + (what % 3) as u64);
        match cs[who] {
            C::Idle if ops.len() < max_ops => {
                ops.push(Sim {
                    client: who as u32,
                    input: pick_input(who as u32, what),
                    output: None,
                    call: t,
                    ret: None,
                });
                cs[who] = C::Invoked(ops.len() - 1);
            }
            C::Invoked(i) => {
                let mut outs = spec.step(&state, &ops[i].input, Window::at(t));
                let (o, s) = outs.swap_remove(what as usize % outs.len());
                state = s;
                ops[i].output = Some(o);
                cs[who] = C::Effected(i);
            }
            C::Effected(i) => {
                if what % 17 == 0 {
                    // Crash after the effect: the client records an unknown outcome.
                    ops[i].output = None;
                    ops[i].ret = Some(t);
                    cs[who] = C::Crashed;
                } else {
                    ops[i].ret = Some(t);
                    cs[who] = C::Idle;
                }
            }
            _ => {}
        }
    }
    for c in cs {
        if let C::Invoked(i) = c {
            // Invoked, never took effect, never returned.
            ops[i].output = None;
        }
    }
    ops
}

/// Brute force: is there an order of `ops`, respecting real time, that the spec accepts?
fn oracle<S: Spec>(ops: &[LinOp<S>]) -> bool {
    fn go<S: Spec>(
        ops: &[LinOp<S>],
        left: u32,
        states: Vec<S::State>,
        seen: &mut HashSet<(u32, Vec<S::State>)>,
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
                let next = successors(&states, &ops[i]);
                !next.is_empty() && go(ops, left & !(1 << i), next.to_vec(), seen)
            })
    }
    go(
        ops,
        (1u32 << ops.len()) - 1,
        Vec::new(),
        &mut HashSet::new(),
    )
}

fn history(events: Vec<Event>, resource: Option<ResourceSpec>) -> History {
    let mut header = Header::new("prop", "sim");
    header.resource = resource;
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

/// Events for simulated operations, sorted by time.
fn events<S: Spec>(
    ops: &[Sim<S>],
    mut encode: impl FnMut(&Sim<S>, &mut Event, &mut Event) -> Phase,
) -> Vec<Event> {
    let mut out = Vec::new();
    for op in ops {
        let kind = OpKind::Read; // replaced by encode
        let mut inv = Event::new(Process::Client(op.client), kind, Phase::Invoke, op.call);
        let mut done = Event::new(Process::Client(op.client), kind, Phase::Ok, 0);
        let phase = encode(op, &mut inv, &mut done);
        out.push(inv);
        match (op.output.is_some(), op.ret) {
            (true, Some(r)) => {
                done.phase = phase;
                done.time = r;
                done.op = out.last().map(|e: &Event| e.op).unwrap_or(kind);
                out.push(done);
            }
            (false, Some(r)) => {
                let mut info = Event::new(
                    Process::Client(op.client),
                    out.last().map(|e: &Event| e.op).unwrap_or(kind),
                    Phase::Info,
                    r,
                );
                info.note = Some("crashed".into());
                out.push(info);
            }
            _ => {}
        }
    }
    out.sort_by_key(|e| (e.time, e.phase != Phase::Invoke));
    out
}

fn register_input(_: u32, what: u8) -> RegisterInput {
    match what % 3 {
        0 => RegisterInput::Read,
        1 => RegisterInput::Write((what / 3 % 3) as i64),
        _ => RegisterInput::Cas {
            from: (what / 3 % 3) as i64,
            to: (what / 9 % 3) as i64,
        },
    }
}

fn register_events(ops: &[Sim<RegisterSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        match &op.input {
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
        match &op.output {
            Some(RegisterOutput::Value(v)) => {
                done.value = Some(v.map_or(serde_json::Value::Null, Into::into));
                Phase::Ok
            }
            Some(RegisterOutput::CasFailed) => Phase::Fail,
            _ => Phase::Ok,
        }
    })
}

fn lock_input(client: u32, what: u8) -> LockInput {
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

fn lock_events(ops: &[Sim<LockSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        match &op.input {
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
        match &op.output {
            Some(LockOutput::Granted(t)) => {
                done.token = *t;
                Phase::Ok
            }
            Some(LockOutput::Busy) | Some(LockOutput::NotHeld) => Phase::Fail,
            _ => Phase::Ok,
        }
    })
}

fn lin_ops<S: Spec>(spec: &S, ops: &[Sim<S>]) -> Vec<LinOp<S>> {
    let spec = Arc::new(spec.clone());
    ops.iter()
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

fn verdict_of(h: &History, selection: Selection) -> Verdict {
    check_history(
        h,
        &Options {
            selection,
            ..Options::default()
        },
    )
    .expect("well-formed")
    .verdict
}

fn verdict(h: &History) -> Verdict {
    check_history(h, &Options::default())
        .expect("well-formed")
        .verdict
}

/// The `which`-th operation (cyclically) that completed with a known answer.
fn pick<S: Spec>(ops: &mut [Sim<S>], which: usize) -> Option<&mut Sim<S>> {
    let known: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].output.is_some() && ops[i].ret.is_some())
        .collect();
    let i = *known.get(which % known.len().max(1))?;
    ops.get_mut(i)
}

/// Changes one answer: a read value, a CAS result, a grant into a refusal, a token.
fn corrupt_register(ops: &mut [Sim<RegisterSpec>], which: usize, how: u8) {
    let Some(op) = pick(ops, which) else { return };
    op.output = match (&op.output, how % 2) {
        (Some(RegisterOutput::Value(v)), 0) => {
            Some(RegisterOutput::Value(Some(v.unwrap_or(0) + 1)))
        }
        (Some(RegisterOutput::Value(_)), _) => Some(RegisterOutput::Value(None)),
        (Some(RegisterOutput::CasOk), _) => Some(RegisterOutput::CasFailed),
        (Some(RegisterOutput::CasFailed), _) => Some(RegisterOutput::CasOk),
        (o, _) => o.clone(),
    };
}

fn corrupt_lock(ops: &mut [Sim<LockSpec>], which: usize, how: u8) {
    let Some(op) = pick(ops, which) else { return };
    op.output = match (&op.output, how % 2) {
        (Some(LockOutput::Granted(_)), 0) => Some(LockOutput::Busy),
        (Some(LockOutput::Granted(Some(t))), _) => {
            Some(LockOutput::Granted(Some(t.saturating_sub(1))))
        }
        (Some(LockOutput::Busy), _) => Some(LockOutput::Granted(None)),
        (Some(LockOutput::NotHeld), _) if matches!(op.input, LockInput::Renew { .. }) => {
            Some(LockOutput::Renewed)
        }
        (Some(LockOutput::NotHeld), _) => Some(LockOutput::Released),
        (Some(LockOutput::Released | LockOutput::Renewed), _) => Some(LockOutput::NotHeld),
        (o, _) => o.clone(),
    };
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        // Beside this file: the default looks for a lib.rs above it, finds none under
        // tests/, and then neither replays nor saves failing cases.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn simulated_register_histories_are_accepted(clients in 1u32..5, choices in prop::collection::vec(any::<u8>(), 0..160)) {
        let ops = simulate(&RegisterSpec::default(), clients, 40, &choices, register_input);
        let h = history(register_events(&ops), Some(ResourceSpec::CasRegister { initial: None }));
        if !h.events.is_empty() {
            prop_assert_eq!(verdict(&h), Verdict::Ok);
        }
    }

    #[test]
    fn simulated_lock_histories_are_accepted(clients in 1u32..5, choices in prop::collection::vec(any::<u8>(), 0..160)) {
        let ops = simulate(&LockSpec::default(), clients, 40, &choices, lock_input);
        let h = history(lock_events(&ops), None);
        if !h.events.is_empty() {
            // Mutual exclusion of the clients' beliefs is not a property of a leased lock
            // (that is the lesson of every pause scenario): only the spec is asserted.
            prop_assert_eq!(verdict_of(&h, Selection::Lock), Verdict::Ok);
        }
    }

    #[test]
    fn corrupted_register_histories_match_the_oracle(clients in 1u32..4, choices in prop::collection::vec(any::<u8>(), 4..40), which in 0usize..8, how in any::<u8>()) {
        let mut ops = simulate(&RegisterSpec::default(), clients, 7, &choices, register_input);
        corrupt_register(&mut ops, which, how);
        let h = history(register_events(&ops), Some(ResourceSpec::CasRegister { initial: None }));
        if !h.events.is_empty() {
            let expected = oracle(&lin_ops(&RegisterSpec::default(), &ops));
            prop_assert_eq!(verdict(&h) == Verdict::Ok, expected);
        }
    }

    #[test]
    fn corrupted_lock_histories_match_the_oracle(clients in 1u32..4, choices in prop::collection::vec(any::<u8>(), 4..40), which in 0usize..8, how in any::<u8>()) {
        let spec = LockSpec::default();
        let mut ops = simulate(&spec, clients, 7, &choices, lock_input);
        corrupt_lock(&mut ops, which, how);
        let h = history(lock_events(&ops), None);
        if ops.iter().any(|o| o.output.is_some()) {
            let expected = oracle(&lin_ops(&spec, &ops));
            let got = verdict_of(&h, Selection::Lock);
            prop_assert_eq!(got == Verdict::Ok, expected);
        }
    }
}

/// The corruption tests are only worth something if corruptions are sometimes caught
/// and sometimes harmless: check both happen, on a fixed sweep of inputs.
#[test]
fn corruptions_are_sometimes_caught_and_sometimes_harmless() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut caught, mut harmless) = (0, 0);
    for _ in 0..400 {
        let choices: Vec<u8> = (0..30).map(|_| next() as u8).collect();
        let mut ops = simulate(&LockSpec::default(), 2, 7, &choices, lock_input);
        corrupt_lock(&mut ops, next() as usize, next() as u8);
        let h = history(lock_events(&ops), None);
        if ops.iter().all(|o| o.output.is_none()) {
            continue;
        }
        let expected = oracle(&lin_ops(&LockSpec::default(), &ops));
        assert_eq!(
            verdict_of(&h, Selection::Lock) == Verdict::Ok,
            expected,
            "{ops:?}"
        );
        if expected {
            harmless += 1;
        } else {
            caught += 1;
        }
    }
    assert!(
        caught > 50 && harmless > 10,
        "caught {caught}, harmless {harmless}"
    );
}
