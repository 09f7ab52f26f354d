//! A spec run under random concurrency, as the bytes of a proptest case dictate:
//! answers lost after the effect, timeouts before it, requests that take effect after
//! their client gave up, operations that never return; and the requests clients make of
//! a register and of a lock.

use locklab_models::spec::{LockInput, RegisterInput, Spec, Window};
use proptest::prelude::*;

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
