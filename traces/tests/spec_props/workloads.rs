//! The workloads, one per spec: a register, a kv map, an inventory, locklab's lock,
//! Knossos's mutex and a Redis node.

use std::collections::BTreeMap;

use locklab_models::redis::spec::{RedisCommand, RedisReply, RedisSpec};
use locklab_models::spec::{
    InventoryInput, InventoryOutput, InventorySpec, KvInput, KvOutput, KvSpec, LockInput,
    LockOutput, LockSpec, MutexInput, MutexOutput, MutexSpec, RegisterInput, RegisterSpec, Spec,
    Window,
};
use locklab_traces::check::linear::{self, LinResult};
use locklab_traces::check::Property;
use locklab_traces::format::{Backend, Event, Header, LockModel, OpKind, Phase, ResourceSpec};
use serde_json::json;

use super::harness::{Recorded, Workload};
use crate::common::*;

/// A register (with or without CAS), empty or starting at a value; an empty one
/// declared in the header or left for the checker to infer.
#[derive(Clone, Debug)]
pub struct Register {
    pub cas: bool,
    pub initial: Option<i64>,
    pub declared: bool,
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
pub struct KvMap;

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
pub struct Kv {
    pub keys: u8,
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
        inv.key = Some(op.input.key().into());
        match &op.input {
            KvInput::Get(_) => inv.op = OpKind::Get,
            KvInput::Put(_, v) => {
                inv.op = OpKind::Put;
                inv.value = Some(serde_json::Value::from(v.clone()).into());
            }
            KvInput::Append(_, v) => {
                inv.op = OpKind::Append;
                inv.value = Some(serde_json::Value::from(v.clone()).into());
            }
        }
        if let Some(KvOutput::Value(v)) = &op.output {
            // A recorder may write an empty value as null.
            done.value = Some(
                match v.is_empty() && op.call.is_multiple_of(2000) {
                    true => serde_json::Value::Null,
                    false => v.clone().into(),
                }
                .into(),
            );
        }
        Phase::Ok
    }
}

/// A stock level: reads (with or without the version), writes, decrements, version
/// CAS (counted or client-chosen versions); or decrements alone, which resource safety
/// accounts for.
#[derive(Clone, Debug)]
pub struct Inventory {
    pub initial: i64,
    pub decrements_only: bool,
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
                inv.value = Some(v.into());
            }
        }
        match &op.output {
            Some(InventoryOutput::Read {
                stock,
                version: Some(v),
            }) => done.value = Some(json!({"stock": stock, "version": v}).into()),
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
pub struct Lock {
    pub reentrant: bool,
    pub leases: bool,
    pub shared_owners: bool,
}

impl Workload for Lock {
    type S = LockSpec;
    fn spec(&self) -> LockSpec {
        LockSpec {
            reentrant: self.reentrant,
            ..LockSpec::default()
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
pub struct Mutex;

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
pub struct Redis;

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
            (Some(RedisReply::Error(_) | RedisReply::Array(_)), _) => Some(RedisReply::Nil),
            (None, _) => None,
        };
    }
}

impl Redis {
    /// The search's verdict, one partition per key (the node is the product of its
    /// keys: each command touches one).
    pub fn verdict(&self, ops: &[Sim<RedisSpec>], timed: bool) -> LinResult<RedisSpec> {
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
