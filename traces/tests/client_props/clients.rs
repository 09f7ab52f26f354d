//! The simulated lock clients' loop through the world, under lost answers, timeouts,
//! late requests and crashes; the history they record, and the truth beside it.

use locklab_models::spec::LockState;
use locklab_traces::format::{Backend, Event, Header, OpKind, Phase, Process, ResourceSpec};

use super::world::*;
use crate::common::*;

/// A request as the history records it.
#[derive(Clone, Debug)]
pub struct Op {
    pub client: u32,
    pub key: usize,
    pub req: Req,
    pub call: u64,
    /// When the client recorded an outcome (`None`: never).
    pub ret: Option<u64>,
    /// The answer it recorded (`None` with a `ret`: `info`).
    pub answer: Option<Ans>,
}

/// What a client does at its next step when it waits for nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Acquire,
    /// Granted: enter, unless the lease has run out.
    Enter,
    Read,
    Write(i64),
    Leave,
    Release,
}

#[derive(Clone, Debug)]
struct Client {
    next: Next,
    /// The lock (and counter) of its current round.
    key: usize,
    /// The request it waits for (an index into the ops) and its answer once it took
    /// effect.
    pending: Option<(usize, Option<Ans>)>,
    token: u64,
    /// The lease certainly runs until then: from the acquire's call.
    bound: u64,
    /// Its open critical section (an index into the truth's).
    inside: Option<usize>,
    stopped: bool,
}

/// The recorded history and the truth.
pub struct Run {
    pub ops: Vec<Op>,
    pub points: Vec<Event>,
    pub truth: Truth,
}

pub fn run(setup: &Setup, choices: &[u8], max_ops: usize) -> Run {
    let mut world = World {
        setup,
        keys: (0..setup.keys)
            .map(|_| Resource {
                lock: LockState::default(),
                holds: vec![0; setup.clients as usize],
                value: setup.initial,
                max_token: 0,
            })
            .collect(),
        truth: Truth {
            counters: vec![Counted::default(); setup.keys],
            ..Truth::default()
        },
    };
    let mut clients: Vec<Client> = (0..setup.clients)
        .map(|_| Client {
            next: Next::Acquire,
            key: 0,
            pending: None,
            token: 0,
            bound: u64::MAX,
            inside: None,
            stopped: false,
        })
        .collect();
    let mut ops: Vec<Op> = Vec::new();
    let mut points: Vec<Event> = Vec::new();
    let marker = |who: usize, key: usize, kind, at| {
        let mut e = Event::new(Process::Client(who as u32), kind, Phase::Ok, at);
        e.key = setup.key_name(key).map(Into::into);
        e
    };
    // Requests whose client gave up on them, still on their way.
    let mut in_flight: Vec<usize> = Vec::new();
    let faults = setup.faults;
    let mut infos = 0;
    let mut t = 1000u64;
    for pair in choices.chunks(2) {
        let (who, what) = (
            pair[0] as usize % setup.clients as usize,
            *pair.get(1).unwrap_or(&0),
        );
        let fate = pair[0] / 4;
        t += 1000 * (1 + (what % 3) as u64);
        if faults.late_effects && fate >= 56 && !in_flight.is_empty() {
            let i = in_flight.swap_remove(what as usize % in_flight.len());
            world.apply(ops[i].client, ops[i].key, ops[i].req, t);
            continue;
        }
        let c = &mut clients[who];
        if c.stopped {
            continue;
        }
        let mut gave_up = None;
        match c.pending {
            Some((i, None)) if faults.strike(faults.time_out, fate, &mut infos) => {
                ops[i].ret = Some(t);
                if faults.late_effects {
                    in_flight.push(i);
                }
                gave_up = Some(i);
            }
            Some((i, None)) => {
                let ans = world.apply(ops[i].client, ops[i].key, ops[i].req, t);
                c.pending = Some((i, Some(ans)));
            }
            Some((i, Some(_))) if faults.strike(faults.lose_answer, what, &mut infos) => {
                ops[i].ret = Some(t);
                gave_up = Some(i);
            }
            Some((i, Some(ans))) => {
                ops[i].ret = Some(t);
                ops[i].answer = Some(ans);
                c.pending = None;
                c.next = match (ops[i].req, ans) {
                    (Req::Acquire, Ans::Granted(token)) => {
                        c.token = token;
                        c.bound = setup.lease.map_or(u64::MAX, |l| ops[i].call + l);
                        Next::Enter
                    }
                    (Req::Read, Ans::Value(v)) if !setup.stock => Next::Write(v + 1),
                    (Req::Read, Ans::Value(v)) if v > 0 => Next::Write(v - 1),
                    // Sold out.
                    (Req::Read, _) => Next::Leave,
                    (Req::Write { .. }, _) => Next::Leave,
                    _ => Next::Acquire,
                };
            }
            None => {
                let req = match c.next {
                    Next::Acquire => {
                        // A mix of `what` that the rest of the step leaves fairly free.
                        c.key = ((what as usize * 37) >> 3) % setup.keys;
                        Some(Req::Acquire)
                    }
                    Next::Enter if t >= c.bound && !setup.reckless => Some(Req::Release),
                    Next::Enter => {
                        world.truth.sections.push(Section {
                            client: who as u32,
                            key: c.key,
                            start: t,
                            end: None,
                        });
                        c.inside = Some(world.truth.sections.len() - 1);
                        if setup.markers {
                            let mut e = marker(who, c.key, OpKind::Enter, t);
                            e.token = Some(c.token);
                            points.push(e);
                        }
                        c.next = if setup.counter {
                            Next::Read
                        } else {
                            Next::Leave
                        };
                        None
                    }
                    // A careful client does not touch the resource once its lease
                    // may have run out.
                    Next::Read | Next::Write(_) if t >= c.bound && !setup.reckless => {
                        c.next = Next::Leave;
                        None
                    }
                    Next::Read => Some(Req::Read),
                    Next::Write(value) => Some(Req::Write {
                        value,
                        token: c.token,
                    }),
                    Next::Leave => {
                        // A careful client with nothing in flight leaves when its lease
                        // runs out at the latest (a timer, between its steps).
                        let at = match setup.reckless || setup.counter {
                            true => t,
                            false => t.min(c.bound.saturating_sub(1)),
                        };
                        if let Some(s) = c.inside.take() {
                            world.truth.sections[s].end = Some(at);
                        }
                        if setup.markers {
                            points.push(marker(who, c.key, OpKind::Leave, at));
                        }
                        c.next = Next::Release;
                        None
                    }
                    Next::Release => Some(Req::Release),
                };
                if let Some(req) = req.filter(|_| ops.len() < max_ops) {
                    ops.push(Op {
                        client: who as u32,
                        key: c.key,
                        req,
                        call: t,
                        ret: None,
                        answer: None,
                    });
                    c.pending = Some((ops.len() - 1, None));
                }
            }
        }
        if let Some(i) = gave_up {
            c.pending = None;
            if !faults.resume {
                c.stopped = true;
            }
            c.next = match ops[i].req {
                // It may hold the lock after all: give it back to be safe.
                Req::Acquire => Next::Release,
                Req::Release => Next::Acquire,
                Req::Read | Req::Write { .. } => Next::Leave,
            };
        }
    }
    for o in &ops {
        if matches!(o.req, Req::Write { .. }) && o.answer.is_none() {
            world.truth.counters[o.key].unknown_writes = true;
        }
    }
    for (key, r) in world.keys.iter().enumerate() {
        world.truth.counters[key].last_value = r.value;
        if setup.counter {
            // A final read by a fresh client, after everything.
            t += 2000;
            ops.push(Op {
                client: setup.clients,
                key,
                req: Req::Read,
                call: t - 1000,
                ret: Some(t),
                answer: Some(Ans::Value(r.value)),
            });
        }
    }
    Run {
        ops,
        points,
        truth: world.truth,
    }
}

pub fn record(setup: &Setup, run: &Run) -> locklab_traces::format::History {
    let mut events = run.points.clone();
    for op in &run.ops {
        let p = Process::Client(op.client);
        let kind = match op.req {
            Req::Acquire => OpKind::Acquire,
            Req::Release => OpKind::Release,
            Req::Read => OpKind::Read,
            Req::Write { .. } => OpKind::Write,
        };
        let mut inv = Event::new(p, kind, Phase::Invoke, op.call);
        inv.key = setup.key_name(op.key).map(Into::into);
        match op.req {
            Req::Acquire => inv.lease_ns = setup.lease,
            Req::Write { value, token } => {
                inv.value = Some(value.into());
                if setup.fence != Fence::None {
                    inv.token = Some(token);
                }
            }
            _ => {}
        }
        events.push(inv);
        let Some(ret) = op.ret else { continue };
        let mut done = Event::new(p, kind, Phase::Ok, ret);
        match op.answer {
            None => done.phase = Phase::Info,
            Some(Ans::Granted(token)) => done.token = Some(token),
            // An inventory read may record the stock alone or as an object.
            Some(Ans::Value(v)) if setup.stock && op.call.is_multiple_of(2000) => {
                done.value = Some(serde_json::json!({ "stock": v }).into())
            }
            Some(Ans::Value(v)) => done.value = Some(v.into()),
            Some(Ans::Busy | Ans::NotHeld | Ans::Rejected) => done.phase = Phase::Fail,
            Some(Ans::Released | Ans::Written) => {}
        }
        events.push(done);
    }
    events.sort_by_key(|e| (e.time, e.phase != Phase::Invoke));
    let mut header = Header::new("prop", Backend::Simulated);
    header.resource = match (setup.counter, setup.stock) {
        (false, _) => None,
        (true, false) => Some(ResourceSpec::Counter {
            initial: setup.initial,
        }),
        (true, true) => Some(ResourceSpec::Inventory {
            initial: setup.initial,
            writes_are_updates: true,
        }),
    };
    history_with(header, events)
}
