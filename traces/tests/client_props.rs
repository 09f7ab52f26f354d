//! The checks that infer beyond a spec (no foreign release, fencing, the overlap of
//! marked critical sections, lost updates of a counter) against simulated runs of lock
//! clients, where what really happened is known:
//! - with a correct lock, clients that keep to their leases and a correct resource,
//!   every check passes;
//! - with a broken lock (it grants to everybody, or releases whoever holds it), reckless
//!   clients or a fence that accepts stale tokens, a check reports a violation only when
//!   one really happened, and the lost updates it counts are those that were lost.
//!
//! Each client loops: acquire → enter → (read → write read + 1, with its token; or, for a
//! stock, sell one unit if there is one: write read − 1) → leave → release; after an
//! acquire whose answer it never got, it releases to be safe.
//! Answers are lost, requests time out and may land later, clients crash.
//!
//! The long run is documented in spec_props.rs.

mod common;

use common::*;
use locklab_models::spec::{LockInput, LockOutput, LockSpec, LockState, Spec, Window};
use locklab_traces::check::{CheckReport, Property, Report, Verdict};
use locklab_traces::format::Backend;
use locklab_traces::format::{Event, Header, OpKind, Phase, Process, ResourceSpec};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The lock service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockKind {
    /// locklab's lock spec.
    Correct,
    /// Grants every acquire (a fresh token each), releases every release.
    GrantsAll,
    /// Releases whoever holds the lock, like a bare `DEL`.
    BlindRelease,
}

/// How the resource treats fencing tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fence {
    /// Writes carry no token.
    None,
    /// A write with a token below one accepted before is refused.
    Correct,
    /// Every write is accepted, whatever its token.
    Broken,
}

#[derive(Clone, Debug)]
struct Setup {
    clients: u32,
    /// Locks, each guarding a counter of the same name.
    keys: usize,
    /// The lease of every acquire (`None`: held until released).
    lease: Option<u64>,
    lock: LockKind,
    /// Read and write the counter inside the critical section.
    counter: bool,
    /// The counters are stocks, of an inventory whose writes are updates: a client
    /// sells one unit if there is one.
    stock: bool,
    fence: Fence,
    /// Record `enter`/`leave`.
    markers: bool,
    /// Enter, and stay inside, whether or not the lease still runs.
    reckless: bool,
    faults: Faults,
    initial: i64,
}

impl Setup {
    /// How a history names a key: not at all when there is only one.
    fn key_name(&self, key: usize) -> Option<String> {
        (self.keys > 1).then(|| format!("k{key}"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Req {
    Acquire,
    Release,
    Read,
    Write { value: i64, token: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ans {
    Granted(u64),
    Busy,
    Released,
    NotHeld,
    Value(i64),
    Written,
    Rejected,
}

/// A request as the history records it.
#[derive(Clone, Debug)]
struct Op {
    client: u32,
    key: usize,
    req: Req,
    call: u64,
    /// When the client recorded an outcome (`None`: never).
    ret: Option<u64>,
    /// The answer it recorded (`None` with a `ret`: `info`).
    answer: Option<Ans>,
}

/// A critical section as it really was.
#[derive(Clone, Debug)]
struct Section {
    client: u32,
    key: usize,
    start: u64,
    /// `None`: never left.
    end: Option<u64>,
}

/// What really happened to one counter.
#[derive(Clone, Debug, Default)]
struct Counted {
    /// Writes that took effect.
    writes: i64,
    /// Whether a write's effect is beyond what the history can tell (a lost answer, a
    /// timeout, no return).
    unknown_writes: bool,
    last_value: i64,
}

/// What really happened.
#[derive(Clone, Debug, Default)]
struct Truth {
    sections: Vec<Section>,
    /// Releases that succeeded though their client did not hold the lock (its lease
    /// had run out, or it never had it).
    foreign_releases: usize,
    /// An accepted write whose token was below one its counter accepted before.
    stale_accepted: bool,
    counters: Vec<Counted>,
}

impl Truth {
    fn overlap(&self) -> bool {
        let end = |s: &Section| s.end.unwrap_or(u64::MAX);
        self.sections.iter().enumerate().any(|(i, a)| {
            self.sections[i + 1..].iter().any(|b| {
                a.client != b.client && a.key == b.key && a.start < end(b) && b.start < end(a)
            })
        })
    }
}

/// One lock and the counter it guards.
struct Resource {
    lock: LockState,
    /// Until when each client holds the lock, as far as its grants and releases go
    /// (whatever the lock service's own state says).
    holds: Vec<u64>,
    value: i64,
    max_token: u64,
}

struct World<'a> {
    setup: &'a Setup,
    keys: Vec<Resource>,
    truth: Truth,
}

impl World<'_> {
    fn apply(&mut self, client: u32, key: usize, req: Req, t: u64) -> Ans {
        let ans = self.serve(client, key, req, t);
        let held = &mut self.keys[key].holds[client as usize];
        match ans {
            Ans::Granted(_) => *held = self.setup.lease.map_or(u64::MAX, |l| t + l),
            Ans::Released => {
                if *held <= t {
                    self.truth.foreign_releases += 1;
                }
                *held = 0;
            }
            Ans::Written => self.truth.counters[key].writes += 1,
            _ => {}
        }
        ans
    }

    fn serve(&mut self, client: u32, key: usize, req: Req, t: u64) -> Ans {
        let owner = client as u64;
        let at = Window::at(t);
        let (lock, fence) = (self.setup.lock, self.setup.fence);
        let r = &mut self.keys[key];
        match req {
            Req::Acquire if lock == LockKind::GrantsAll => {
                let token = r.lock.last_token + 1;
                r.lock.last_token = token;
                Ans::Granted(token)
            }
            Req::Release if lock == LockKind::GrantsAll => Ans::Released,
            Req::Release if lock == LockKind::BlindRelease => {
                match r.lock.holder.as_ref().filter(|h| h.maybe_live(at)) {
                    Some(_) => {
                        r.lock.holder = None;
                        Ans::Released
                    }
                    None => Ans::NotHeld,
                }
            }
            Req::Acquire | Req::Release => {
                let input = match req {
                    Req::Acquire => LockInput::Acquire {
                        owner,
                        lease: self.setup.lease,
                    },
                    _ => LockInput::Release { owner },
                };
                let (out, next) = LockSpec::default()
                    .step(&r.lock, &input, at)
                    .into_iter()
                    .next()
                    .expect("at an instant the lock has one outcome");
                r.lock = next;
                match out {
                    LockOutput::Granted(t) => Ans::Granted(t.expect("the spec tells the token")),
                    LockOutput::Busy => Ans::Busy,
                    LockOutput::Released => Ans::Released,
                    _ => Ans::NotHeld,
                }
            }
            Req::Read => Ans::Value(r.value),
            Req::Write { value, token } => {
                if fence == Fence::Correct && token < r.max_token {
                    return Ans::Rejected;
                }
                if fence != Fence::None {
                    self.truth.stale_accepted |= token < r.max_token;
                    r.max_token = r.max_token.max(token);
                }
                r.value = value;
                Ans::Written
            }
        }
    }
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
struct Run {
    ops: Vec<Op>,
    points: Vec<Event>,
    truth: Truth,
}

fn run(setup: &Setup, choices: &[u8], max_ops: usize) -> Run {
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
        e.key = setup.key_name(key);
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

fn record(setup: &Setup, run: &Run) -> locklab_traces::format::History {
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
        inv.key = setup.key_name(op.key);
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
                done.value = Some(serde_json::json!({ "stock": v }))
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

fn find(r: &Report, p: Property) -> Option<&CheckReport> {
    r.checks.iter().find(|c| c.property == p)
}

fn setup(
    lock: BoxedStrategy<LockKind>,
    reckless: BoxedStrategy<bool>,
) -> impl Strategy<Value = Setup> {
    (
        (1u32..5, 1usize..4, any::<bool>()),
        prop::option::of((5u64..60).prop_map(|l| l * 1000)),
        lock,
        any::<bool>(),
        prop::sample::select(vec![Fence::None, Fence::Correct, Fence::Broken]),
        any::<bool>(),
        reckless,
        faults(),
        0i64..4,
    )
        .prop_map(
            |(
                (clients, keys, stock),
                lease,
                lock,
                counter,
                fence,
                markers,
                reckless,
                faults,
                initial,
            )| {
                Setup {
                    clients,
                    keys,
                    stock,
                    lease,
                    lock,
                    counter,
                    fence,
                    markers,
                    reckless,
                    faults,
                    initial,
                }
            },
        )
}

/// A correct lock, careful clients, a fence that works (or none).
fn correct_setup() -> impl Strategy<Value = Setup> {
    setup(Just(LockKind::Correct).boxed(), Just(false).boxed()).prop_map(|mut s| {
        if s.fence == Fence::Broken {
            s.fence = Fence::Correct;
        }
        s
    })
}

fn any_setup() -> impl Strategy<Value = Setup> {
    setup(
        prop::sample::select(vec![
            LockKind::Correct,
            LockKind::GrantsAll,
            LockKind::BlindRelease,
        ])
        .boxed(),
        any::<bool>().boxed(),
    )
}

/// Every check passes on a correct run, but for what a lease cannot promise: the
/// critical sections the history implies (the clients' beliefs), and sections that
/// hold requests, outlive a lease (the careful client only leaves at its next step);
/// and an update whose read was not fenced may be lost once a lease ran out. Nor can
/// an owner-aware lock tell a stale release of a client's from its current one.
fn correct_runs_pass(setup: &Setup, choices: &[u8]) -> Result<(), TestCaseError> {
    let run = run(setup, choices, 40);
    let h = record(setup, &run);
    let r = auto_report(&h, choices.len() % 2 == 1);
    let mut exempt = Vec::new();
    // A release that lands after its client gave up on it frees that client's next
    // hold (the same owner, to the lock): two clients inside, and updates lost, for real.
    let stale_release = setup.faults.late_effects;
    let lease = setup.lease.is_some();
    // Without an `enter` (none, or every lease ran out first) the sections are derived
    // from grants: beliefs.
    if stale_release || (lease && (setup.counter || run.points.is_empty())) {
        exempt.push(Property::MutualExclusion);
    }
    if stale_release || (lease && setup.counter) {
        exempt.push(Property::ResourceSafety);
    }
    for c in r.checks.iter().filter(|c| !exempt.contains(&c.property)) {
        prop_assert_eq!(
            c.verdict,
            Verdict::Ok,
            "{:#?}\n{}\n{:#?}",
            c,
            show(&h),
            run.truth
        );
    }
    Ok(())
}

/// Whatever the lock, the clients and the fence: a violation is reported only where one
/// happened, and lost updates are counted as they were lost.
fn violations_are_real(setup: &Setup, choices: &[u8]) -> Result<(), TestCaseError> {
    let run = run(setup, choices, 40);
    let h = record(setup, &run);
    let r = auto_report(&h, choices.len() % 2 == 1);
    let truth = &run.truth;
    let says = |p| find(&r, p).map(|c| c.verdict);
    let ctx = || format!("{:#?}\n{}\n{:#?}", r.checks, show(&h), truth);
    // The register itself is always correct.
    prop_assert_ne!(
        says(Property::ResourceLinearizability),
        Some(Verdict::Violation),
        "{}",
        ctx()
    );
    if setup.lock == LockKind::Correct {
        prop_assert_ne!(
            says(Property::LockLinearizability),
            Some(Verdict::Violation),
            "{}",
            ctx()
        );
    }
    if says(Property::NoForeignRelease) == Some(Verdict::Violation) {
        prop_assert!(truth.foreign_releases > 0, "{}", ctx());
    }
    if says(Property::Fencing) == Some(Verdict::Violation) {
        prop_assert!(truth.stale_accepted, "{}", ctx());
    }
    // Marked sections, if anybody entered (else they are derived from grants: beliefs).
    if !run.points.is_empty() {
        let overlap = says(Property::MutualExclusion) == Some(Verdict::Violation);
        if overlap {
            prop_assert!(truth.overlap(), "{}", ctx());
        }
        // A section never left is only known to last until its client's last event.
        if truth.sections.iter().all(|s| s.end.is_some()) {
            prop_assert_eq!(overlap, truth.overlap(), "{}", ctx());
        }
    }
    // Each counter is accounted for on its own; the worst one is reported.
    let lost = |k: usize| {
        let c = &truth.counters[k];
        c.writes - (c.last_value - setup.initial).abs()
    };
    let oversold = |k: usize| match setup.stock {
        true => (truth.counters[k].writes - setup.initial).max(0),
        false => 0,
    };
    let accountable: Vec<usize> = (0..setup.keys)
        .filter(|&k| !truth.counters[k].unknown_writes && truth.counters[k].writes > 0)
        .collect();
    match find(&r, Property::ResourceSafety) {
        Some(safety) => {
            let key = match safety.stats.get("key").and_then(|k| k.as_str()) {
                Some(name) => name[1..].parse::<usize>().expect("k<n>"),
                None => {
                    prop_assert_eq!(accountable.len(), 1, "{}", ctx());
                    accountable[0]
                }
            };
            prop_assert!(accountable.contains(&key), "{}", ctx());
            let stat = |name| safety.stats.get(name).and_then(|v| v.as_i64());
            prop_assert_eq!(stat("lost_updates"), Some(lost(key)), "{}", ctx());
            prop_assert_eq!(stat("oversold"), Some(oversold(key)), "{}", ctx());
            let any = accountable.iter().any(|&k| lost(k) > 0 || oversold(k) > 0);
            prop_assert_eq!(safety.verdict == Verdict::Violation, any, "{}", ctx());
        }
        None => prop_assert!(accountable.is_empty() || !setup.counter, "{}", ctx()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn correct_runs_pass_every_check(setup in correct_setup(), choices in prop::collection::vec(any::<u8>(), 0..200)) {
        correct_runs_pass(&setup, &choices)?;
    }

    #[test]
    fn violations_are_reported_only_where_they_happened(setup in any_setup(), choices in prop::collection::vec(any::<u8>(), 0..200)) {
        violations_are_real(&setup, &choices)?;
    }
}

/// The soundness property above is only worth something if the broken runs do get
/// caught: on a fixed sample of runs, each check finds a violation now and then.
#[test]
fn broken_runs_are_sometimes_caught() {
    // Broken locks with a broken fence in front of the counters, to give every check
    // something to find.
    let setups = any_setup().prop_map(|mut s| {
        if s.lock != LockKind::Correct {
            s.counter = true;
            s.fence = Fence::Broken;
        }
        s
    });
    let broken = (setups, prop::collection::vec(any::<u8>(), 0..200));
    let mut caught: Vec<Property> = Vec::new();
    for (setup, choices) in sample(broken, 600) {
        let run = run(&setup, &choices, 40);
        let r = auto_report(&record(&setup, &run), choices.len() % 2 == 1);
        caught.extend(
            r.checks
                .iter()
                .filter(|c| c.verdict == Verdict::Violation)
                .map(|c| c.property),
        );
    }
    for p in [
        Property::NoForeignRelease,
        Property::Fencing,
        Property::ResourceSafety,
        Property::MutualExclusion,
        Property::LockLinearizability,
    ] {
        let n = caught.iter().filter(|&&c| c == p).count();
        assert!(n >= 3, "{p:?} caught {n} times in the sample");
    }
}
