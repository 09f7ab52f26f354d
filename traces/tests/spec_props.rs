//! Every spec against the whole pipeline (events → pairing → conversion → partitioning →
//! porcupine-rs search) and a brute-force oracle:
//! - a history simulated from a correct run, with lost answers, timeouts, requests that
//!   land after their client gave up and operations that never return, passes every
//!   check that runs (a correct run has nothing to report);
//! - after one answer or one operation's window is corrupted, the verdict is Ok exactly
//!   when the oracle finds an order.
//!
//! The Redis node is not reachable through `check_history`, so it goes to the search
//! directly, partitioned by key, against the oracle on the whole node.
//!
//! Default case counts (300 per property) keep the property files to seconds. The long
//! run, not part of the default test run: 50 000 cases per property, about two minutes
//! of tests on two busy cores after the release build (three minutes in all):
//!
//! ```text
//! PROPTEST_CASES=50000 cargo test -p locklab-traces --release --test spec_props --test client_props --test linearizability_props
//! ```

mod common;

use locklab_traces::format::Backend;
use std::collections::BTreeMap;

use common::*;
use locklab_models::redis::spec::{RedisCommand, RedisReply, RedisSpec};
use locklab_models::spec::{
    InventoryInput, InventoryOutput, InventorySpec, KvInput, KvOutput, KvSpec, LockInput,
    LockOutput, LockSpec, MutexInput, MutexOutput, MutexSpec, Outcomes, RegisterInput,
    RegisterSpec, Spec, Window,
};
use locklab_traces::check::linear::{self, LinResult};
use locklab_traces::check::{Property, Verdict};
use locklab_traces::format::{Event, Header, LockModel, OpKind, Phase, ResourceSpec};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::json;

type In<W> = <<W as Workload>::S as Spec>::Input;
type Out<W> = <<W as Workload>::S as Spec>::Output;

/// A spec and the requests clients make of it.
trait Workload {
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
trait Recorded: Workload {
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

fn simulate_workload<W: Workload>(
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

fn record<W: Recorded>(w: &W, ops: &[Sim<W::S>]) -> locklab_traces::format::History {
    history_with(w.header(), events(ops, |o, i, d| w.encode(o, i, d)))
}

/// The workload's exemptions, and the critical sections if a release may land after
/// its client gave up on it: it frees that client's next hold (the same owner, to the
/// lock), and two clients believe they hold the lock.
fn exempt<W: Recorded>(w: &W, faults: Faults) -> Vec<Property> {
    let mut exempt = w.exempt();
    if faults.late_effects {
        exempt.push(Property::MutualExclusion);
    }
    exempt
}

/// A simulated run passes every check that is not exempt.
fn accepted<W: Recorded>(
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
fn corrupt<W: Workload>(w: &W, ops: &mut [Sim<W::S>], which: usize, how: u8) {
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
fn matches_oracle<W: Recorded>(
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
struct Keyed<S>(S);

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
struct Keys<W> {
    inner: W,
    keys: u8,
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
            inv.key = Some(op.input.0.clone());
        }
        phase
    }
    fn exempt(&self) -> Vec<Property> {
        self.inner.exempt()
    }
}

/// A register (with or without CAS), empty or starting at a value; an empty one
/// declared in the header or left for the checker to infer.
#[derive(Clone, Debug)]
struct Register {
    cas: bool,
    initial: Option<i64>,
    declared: bool,
}

impl Workload for Register {
    type S = RegisterSpec;
    fn spec(&self) -> RegisterSpec {
        RegisterSpec {
            initial: self.initial,
        }
    }
    fn input(&self, client: u32, what: u8) -> RegisterInput {
        if self.cas {
            register_input(client, what)
        } else if what.is_multiple_of(2) {
            RegisterInput::Read
        } else {
            RegisterInput::Write((what / 2 % 3) as i64)
        }
    }
    fn corrupt(&self, op: &mut Sim<RegisterSpec>, how: u8) {
        corrupt_register_answer(&mut op.output, how)
    }
}

impl Recorded for Register {
    fn header(&self) -> Header {
        let mut h = Header::new("prop", Backend::Simulated);
        h.resource = match (self.cas, self.declared || self.initial.is_some()) {
            (_, false) => None,
            (true, true) => Some(ResourceSpec::CasRegister {
                initial: self.initial,
            }),
            (false, true) => Some(ResourceSpec::Register {
                initial: self.initial,
            }),
        };
        h
    }
    fn encode(&self, op: &Sim<RegisterSpec>, inv: &mut Event, done: &mut Event) -> Phase {
        encode_register(&op.input, &op.output, inv, done)
    }
}

/// A map of a few keys, each a [`KvSpec`]: the oracle's model of the whole map, where
/// the pipeline checks key by key.
#[derive(Clone, Debug, Default)]
struct KvMap;

impl Spec for KvMap {
    type State = BTreeMap<String, String>;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &KvInput,
        at: Window,
    ) -> locklab_models::spec::Outcomes<KvOutput, Self::State> {
        let key = input.key().to_string();
        let value = state.get(&key).cloned().unwrap_or_default();
        KvSpec
            .step(&value, input, at)
            .into_iter()
            .map(|(o, v)| {
                let mut next = state.clone();
                // An empty value is a key never written: one state for both.
                if v.is_empty() {
                    next.remove(&key);
                } else {
                    next.insert(key.clone(), v);
                }
                (o, next)
            })
            .collect()
    }
}

#[derive(Clone, Debug)]
struct Kv {
    keys: u8,
}

impl Kv {
    /// A kv history needs no header: `get`, `put` and `append` say what it is.
    fn declared(&self) -> bool {
        self.keys != 2
    }
}

impl Workload for Kv {
    type S = KvMap;
    fn spec(&self) -> KvMap {
        KvMap
    }
    fn input(&self, _: u32, what: u8) -> KvInput {
        let key = ["a", "b", "c"][(what / 3 % self.keys) as usize].to_string();
        let value = ["x", "y", "z"][(what / 9 % 3) as usize].to_string();
        match what % 3 {
            0 => KvInput::Get(key),
            1 => KvInput::Put(key, value),
            _ => KvInput::Append(key, value),
        }
    }
    fn corrupt(&self, op: &mut Sim<KvMap>, how: u8) {
        if let Some(KvOutput::Value(v)) = &mut op.output {
            match how % 3 {
                0 => v.push('x'),
                1 => v.clear(),
                _ => *v = v.chars().rev().collect(),
            }
        }
    }
}

impl Recorded for Kv {
    fn header(&self) -> Header {
        let mut h = Header::new("prop", Backend::Simulated);
        h.resource = self.declared().then_some(ResourceSpec::Kv);
        h
    }
    fn encode(&self, op: &Sim<KvMap>, inv: &mut Event, done: &mut Event) -> Phase {
        inv.key = Some(op.input.key().to_string());
        match &op.input {
            KvInput::Get(_) => inv.op = OpKind::Get,
            KvInput::Put(_, v) => {
                inv.op = OpKind::Put;
                inv.value = Some(v.clone().into());
            }
            KvInput::Append(_, v) => {
                inv.op = OpKind::Append;
                inv.value = Some(v.clone().into());
            }
        }
        if let Some(KvOutput::Value(v)) = &op.output {
            // A recorder may write an empty value as null.
            done.value = Some(match v.is_empty() && op.call.is_multiple_of(2000) {
                true => serde_json::Value::Null,
                false => v.clone().into(),
            });
        }
        Phase::Ok
    }
}

/// A stock level: reads (with or without the version), writes, decrements, version
/// CAS (counted or client-chosen versions); or decrements alone, which resource safety
/// accounts for.
#[derive(Clone, Debug)]
struct Inventory {
    initial: i64,
    decrements_only: bool,
}

impl Workload for Inventory {
    type S = InventorySpec;
    fn spec(&self) -> InventorySpec {
        InventorySpec {
            initial: self.initial,
        }
    }
    fn input(&self, _: u32, what: u8) -> InventoryInput {
        let n = (what / 4 % 4) as i64;
        match (what % 4, self.decrements_only) {
            (0, _) => InventoryInput::Read,
            (_, true) | (1, _) => InventoryInput::Decrement(1 + (what / 16 % 2) as i64),
            (2, _) => InventoryInput::Write(n),
            _ => InventoryInput::Cas {
                expect_version: (what / 16 % 3) as u64,
                stock: n,
                new_version: (what >= 192).then_some((what / 64 % 2) as u64 + 1),
            },
        }
    }
    fn blur(&self, out: &mut InventoryOutput, what: u8) {
        if let InventoryOutput::Read { version, .. } = out {
            if what.is_multiple_of(5) {
                *version = None;
            }
        }
    }
    fn corrupt(&self, op: &mut Sim<InventorySpec>, how: u8) {
        match (&mut op.output, how % 2) {
            (Some(InventoryOutput::Read { stock, .. }), 0) => *stock += 1,
            (Some(InventoryOutput::Read { version, .. }), _) => {
                *version = Some(version.map_or(0, |v| v + 1))
            }
            // A write cannot be refused: a `fail` says it did not happen.
            (Some(InventoryOutput::Done), _) if matches!(op.input, InventoryInput::Write(_)) => {
                op.output = None;
                op.refused = true;
            }
            (Some(o @ InventoryOutput::Done), _) => *o = InventoryOutput::Refused,
            (Some(o @ InventoryOutput::Refused), _) => *o = InventoryOutput::Done,
            _ => {}
        }
    }
}

impl Recorded for Inventory {
    fn header(&self) -> Header {
        let mut h = Header::new("prop", Backend::Simulated);
        h.resource = Some(ResourceSpec::Inventory {
            initial: self.initial,
            writes_are_updates: false,
        });
        h
    }
    fn encode(&self, op: &Sim<InventorySpec>, inv: &mut Event, done: &mut Event) -> Phase {
        match &op.input {
            InventoryInput::Read => inv.op = OpKind::Read,
            InventoryInput::Write(n) => {
                inv.op = OpKind::Write;
                inv.value = Some((*n).into());
            }
            InventoryInput::Decrement(k) => {
                inv.op = OpKind::Decrement;
                // One unit is the default.
                if *k != 1 || !op.call.is_multiple_of(2000) {
                    inv.value = Some((*k).into());
                }
            }
            InventoryInput::Cas {
                expect_version,
                stock,
                new_version,
            } => {
                inv.op = OpKind::Cas;
                let mut v = json!({"expect_version": expect_version, "stock": stock});
                if let Some(n) = new_version {
                    v["new_version"] = (*n).into();
                }
                inv.value = Some(v);
            }
        }
        match &op.output {
            Some(InventoryOutput::Read {
                stock,
                version: Some(v),
            }) => done.value = Some(json!({"stock": stock, "version": v})),
            Some(InventoryOutput::Read {
                stock,
                version: None,
            }) => done.value = Some((*stock).into()),
            Some(InventoryOutput::Refused) => return Phase::Fail,
            _ => {}
        }
        Phase::Ok
    }
}

/// locklab's lock: reentrant or not, with leases (and renewals) or without, each
/// process its own owner or two processes per owner.
#[derive(Clone, Debug)]
struct Lock {
    reentrant: bool,
    leases: bool,
    shared_owners: bool,
}

impl Workload for Lock {
    type S = LockSpec;
    fn spec(&self) -> LockSpec {
        LockSpec {
            reentrant: self.reentrant,
            late_expiry: false,
        }
    }
    fn input(&self, client: u32, what: u8) -> LockInput {
        let owner = match self.shared_owners {
            true => client as u64 % 2,
            false => client as u64,
        };
        match lock_input(client, what) {
            LockInput::Acquire { lease, .. } => LockInput::Acquire {
                owner,
                lease: lease.filter(|_| self.leases),
            },
            LockInput::Renew { lease, .. } if self.leases => LockInput::Renew { owner, lease },
            _ => LockInput::Release { owner },
        }
    }
    fn blur(&self, out: &mut LockOutput, what: u8) {
        if let LockOutput::Granted(t) = out {
            if what.is_multiple_of(5) {
                *t = None;
            }
        }
    }
    fn corrupt(&self, op: &mut Sim<LockSpec>, how: u8) {
        corrupt_lock_answer(&op.input, &mut op.output, how)
    }
}

impl Recorded for Lock {
    fn header(&self) -> Header {
        let mut h = Header::new("prop", Backend::Simulated);
        h.reentrant = self.reentrant;
        h
    }
    fn encode(&self, op: &Sim<LockSpec>, inv: &mut Event, done: &mut Event) -> Phase {
        encode_lock(op.client, &op.input, &op.output, inv, done)
    }
    /// The critical sections the history implies are the clients' beliefs: a lease
    /// runs out under its holder's feet, and a process releases a lock another process
    /// of the same owner believes it holds. Neither is the lock's fault.
    fn exempt(&self) -> Vec<Property> {
        match self.leases || self.shared_owners {
            true => vec![Property::MutualExclusion],
            false => vec![],
        }
    }
}

/// Knossos's mutex, as a Jepsen history records it: an acquire that finds the mutex
/// held is refused (`fail`) or blocks until it times out or never returns.
#[derive(Clone, Debug)]
struct Mutex;

impl Workload for Mutex {
    type S = MutexSpec;
    fn spec(&self) -> MutexSpec {
        MutexSpec
    }
    fn input(&self, _: u32, what: u8) -> MutexInput {
        match what % 2 {
            0 => MutexInput::Acquire,
            _ => MutexInput::Release,
        }
    }
    /// A `fail` that did happen, or an `ok` that did not.
    fn corrupt(&self, op: &mut Sim<MutexSpec>, _: u8) {
        if op.refused {
            op.refused = false;
            op.output = Some(MutexOutput::Done);
        } else {
            op.refused = true;
            op.output = None;
        }
    }
}

impl Recorded for Mutex {
    fn header(&self) -> Header {
        let mut h = Header::new("prop", Backend::Simulated);
        h.lock = Some(LockModel::Mutex);
        h
    }
    fn encode(&self, op: &Sim<MutexSpec>, inv: &mut Event, _: &mut Event) -> Phase {
        inv.op = match op.input {
            MutexInput::Acquire => OpKind::Acquire,
            MutexInput::Release => OpKind::Release,
        };
        Phase::Ok
    }
}

/// A Redis node, as lock clients use it: `SET NX PX`, `GET`, `DEL`, `PTTL`, the
/// compare-and-delete script, and `HINCRBY` (on its own key, or on the lock's, where it
/// meets a string: `WRONGTYPE`).
#[derive(Clone, Debug)]
struct Redis;

impl Workload for Redis {
    type S = RedisSpec;
    fn spec(&self) -> RedisSpec {
        RedisSpec::default()
    }

    fn input(&self, client: u32, what: u8) -> RedisCommand {
        let key = "lock".to_string();
        let mine = format!("c{client}");
        match what % 7 {
            0 | 1 => RedisCommand::Set {
                key,
                value: mine,
                nx: true,
                px: Some(1000 * (3 + (what / 7 % 6) as u64)),
            },
            2 => RedisCommand::Get { key },
            3 => RedisCommand::EvalCompareAndDelete {
                key,
                // Sometimes another client's value: the script must refuse it.
                value: match what / 7 % 3 {
                    0 => format!("c{}", (client + 1) % 4),
                    _ => mine,
                },
            },
            4 => RedisCommand::Del { key },
            5 => RedisCommand::PTtl { key },
            _ => RedisCommand::HIncrBy {
                key: match what / 7 % 4 {
                    0 => key,
                    _ => "holds".into(),
                },
                field: mine,
                by: 1,
            },
        }
    }

    fn corrupt(&self, op: &mut Sim<RedisSpec>, how: u8) {
        op.output = match (op.output.take(), how % 2) {
            (Some(RedisReply::Ok), _) => Some(RedisReply::Nil),
            (Some(RedisReply::Nil), 0) => Some(RedisReply::Ok),
            (Some(RedisReply::Nil), _) => Some(RedisReply::Bulk("c0".into())),
            (Some(RedisReply::Integer(n)), 0) => Some(RedisReply::Integer(n + 1)),
            (Some(RedisReply::Integer(n)), _) => Some(RedisReply::Integer(n ^ 1)),
            (Some(RedisReply::Bulk(_)), 0) => Some(RedisReply::Nil),
            (Some(RedisReply::Bulk(v)), _) => Some(RedisReply::Bulk(format!("{v}!"))),
            (Some(RedisReply::Error(_)), _) => Some(RedisReply::Nil),
            (None, _) => None,
        };
    }
}

impl Redis {
    /// The search's verdict, one partition per key (the node is the product of its
    /// keys: each command touches one).
    fn verdict(&self, ops: &[Sim<RedisSpec>], timed: bool) -> LinResult<RedisSpec> {
        let mut parts: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for op in lin_ops(&self.spec(), ops) {
            parts
                .entry(op.input.key().unwrap_or_default().to_string())
                .or_default()
                .push(op);
        }
        let budget = linear::Budget {
            deadline: timed.then(|| std::time::Instant::now() + std::time::Duration::from_secs(60)),
            max_bytes: usize::MAX,
        };
        linear::check(&parts.into_values().collect::<Vec<_>>(), &budget)
    }
}

fn keys<W: Clone + std::fmt::Debug>(
    inner: impl Strategy<Value = W>,
) -> impl Strategy<Value = Keys<W>> {
    (inner, 1u8..4).prop_map(|(inner, keys)| Keys { inner, keys })
}

fn lock_workload() -> impl Strategy<Value = Lock> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(reentrant, leases, shared_owners)| {
        Lock {
            reentrant,
            leases,
            shared_owners,
        }
    })
}

fn register_workload() -> impl Strategy<Value = Register> {
    (any::<bool>(), prop::option::of(0i64..2), any::<bool>()).prop_map(
        |(cas, initial, declared)| Register {
            cas,
            initial,
            declared,
        },
    )
}

fn inventory_workload() -> impl Strategy<Value = Inventory> {
    (0i64..5, any::<bool>()).prop_map(|(initial, decrements_only)| Inventory {
        initial,
        decrements_only,
    })
}

fn choices(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn simulated_registers_pass(w in keys(register_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_registers_match_the_oracle(w in keys(register_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_kv_maps_pass(keys in 1u8..4, clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&Kv { keys }, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_kv_maps_match_the_oracle(keys in 1u8..4, clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&Kv { keys }, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_inventories_pass(w in keys(inventory_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_inventories_match_the_oracle(w in keys(inventory_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_locks_pass(w in keys(lock_workload()), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_locks_match_the_oracle(w in keys(lock_workload()), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_mutexes_pass(w in keys(Just(Mutex)), clients in 1u32..5, choices in choices(120), faults in faults()) {
        accepted(&w, clients, &choices, faults)?;
    }

    #[test]
    fn corrupted_mutexes_match_the_oracle(w in keys(Just(Mutex)), clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        matches_oracle(&w, clients, &choices, faults, which, how)?;
    }

    #[test]
    fn simulated_redis_nodes_pass(clients in 1u32..5, choices in choices(120), faults in faults()) {
        let ops = simulate_workload(&Redis, clients, 30, &choices, faults);
        let v = Redis.verdict(&ops, choices.len() % 2 == 1);
        prop_assert!(matches!(v, LinResult::Ok), "{:#?}\n{:#?}", v, ops);
    }

    #[test]
    fn corrupted_redis_nodes_match_the_oracle(clients in 1u32..5, choices in choices(48), faults in faults(), which in 0usize..8, how in any::<u8>()) {
        let mut ops = simulate_workload(&Redis, clients, 8, &choices, faults);
        corrupt(&Redis, &mut ops, which, how);
        let expected = oracle(&lin_ops(&Redis.spec(), &ops));
        let v = Redis.verdict(&ops, choices.len() % 2 == 1);
        prop_assert_eq!(matches!(v, LinResult::Ok), expected, "{:#?}\n{:#?}", v, ops);
    }
}

/// What a sample of corrupted histories of a workload covers: how many the oracle
/// rejects and accepts, and how many answers were lost, timed out, landed late or never
/// came.
#[derive(Debug, Default)]
struct Covered {
    rejected: usize,
    accepted: usize,
    lost: usize,
    timed_out: usize,
    late: usize,
    never: usize,
}

fn cover<W: Workload + std::fmt::Debug>(workloads: impl Strategy<Value = W>) -> Covered {
    let cases = (
        workloads,
        1u32..5,
        choices(48),
        faults(),
        0usize..8,
        any::<u8>(),
    );
    let mut c = Covered::default();
    for (w, clients, choices, faults, which, how) in sample(cases, 300) {
        let mut ops = simulate_workload(&w, clients, 8, &choices, faults);
        for op in &ops {
            match (op.ret, op.output.is_some() || op.refused, op.effect) {
                (None, _, _) => c.never += 1,
                (Some(_), false, Some(e)) if e < op.call => unreachable!(),
                (Some(r), false, Some(e)) if e > r => c.late += 1,
                (Some(_), false, Some(_)) => c.lost += 1,
                (Some(_), false, None) => c.timed_out += 1,
                _ => {}
            }
        }
        corrupt(&w, &mut ops, which, how);
        match oracle(&lin_ops(&w.spec(), &ops)) {
            true => c.accepted += 1,
            false => c.rejected += 1,
        }
    }
    c
}

/// The corruption tests are only worth something if corruptions are sometimes caught
/// and sometimes harmless, and the faults all happen: checked on a fixed sample.
#[test]
fn corruptions_and_faults_cover_every_spec() {
    fn enough(name: &str, c: Covered) {
        let all = [c.rejected, c.accepted, c.lost, c.timed_out, c.late, c.never];
        assert!(all.iter().all(|&n| n >= 5), "{name}: {c:?}");
    }
    enough("register", cover(keys(register_workload())));
    enough("kv", cover((1u8..4).prop_map(|keys| Kv { keys })));
    enough("inventory", cover(keys(inventory_workload())));
    enough("lock", cover(keys(lock_workload())));
    enough("mutex", cover(keys(Just(Mutex))));
    enough("redis", cover(Just(Redis)));
}
