//! The scenario registry: per id, the protocol, faults, default bounds, properties,
//! expected verdict and lesson — and the one entry point that builds the model for an
//! id, searches it and tells the result.

use std::fmt::Debug;
use std::hash::Hash;

use serde::Serialize;

use crate::check::{bfs, Limits, Narrate, Stats};
use crate::inventory::{InventoryModel, InventoryProtocol};
use crate::redis::model::props;
use crate::redis::{Protocol, RedisLockModel, ValueKind};
use crate::redlock::RedlockModel;

/// The verdict a scenario should reach at its default bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "properties", rename_all = "snake_case")]
pub enum Expected {
    /// No violation within the bounds.
    Holds,
    /// Exactly these properties are violated.
    Violates(&'static [&'static str]),
}

/// A catalog row.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    /// What users type.
    pub id: &'static str,
    /// `inventory`, `redis` or `redlock`.
    pub family: &'static str,
    /// The protocol in words.
    pub protocol: &'static str,
    /// The faults the checker may inject.
    pub faults: &'static str,
    /// The properties checked.
    pub properties: &'static [&'static str],
    /// What a correct model finds.
    pub expected: Expected,
    /// Why it matters.
    pub lesson: &'static str,
    /// Default bounds.
    pub defaults: Params,
}

/// Bounds a user may change on the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Clients (buyers).
    pub clients: usize,
    /// Replicas behind the master (Redis failover scenarios).
    pub replicas: usize,
    /// Redlock nodes.
    pub nodes: usize,
    /// Lease in ticks.
    pub ttl: u64,
    /// Fault budgets by name (`pause`, `crash`, `failover`, `restart`, `jump`).
    pub faults: Vec<(String, u8)>,
}

const P: Params = Params {
    clients: 2,
    replicas: 0,
    nodes: 0,
    ttl: 2,
    faults: Vec::new(),
};

/// Fault names a family understands.
pub fn fault_names(family: &str) -> &'static [&'static str] {
    match family {
        "redis" => &["pause", "crash", "failover"],
        "redlock" => &["pause", "restart", "jump"],
        _ => &[],
    }
}

fn faults(list: &[(&str, u8)]) -> Vec<(String, u8)> {
    list.iter().map(|(n, b)| (n.to_string(), *b)).collect()
}

const MX: &[&str] = &[props::MUTEX];
const MX_FR: &[&str] = &[props::MUTEX, props::FOREIGN];
const FR: &[&str] = &[props::FOREIGN];
const LIVE: &[&str] = &[props::LIVENESS];
const MX_LIVE: &[&str] = &[props::MUTEX, props::LIVENESS];
const RES: &[&str] = &[props::RESOURCE];
const REENT: &[&str] = &[props::MUTEX, props::FOREIGN, props::REENTRANCY];

#[allow(clippy::too_many_arguments)]
fn row(
    id: &'static str,
    family: &'static str,
    protocol: &'static str,
    fault: &'static str,
    properties: &'static [&'static str],
    expected: Expected,
    lesson: &'static str,
    defaults: Params,
) -> Scenario {
    Scenario {
        id,
        family,
        protocol,
        faults: fault,
        properties,
        expected,
        lesson,
        defaults,
    }
}

/// Every scenario of the inventory, Redis and Redlock families.
pub fn scenarios() -> Vec<Scenario> {
    use Expected::{Holds, Violates};
    let redis = |f: &[(&str, u8)]| Params {
        faults: faults(f),
        ..P
    };
    let failover = |replicas| Params {
        replicas,
        faults: faults(&[("failover", 1)]),
        ..P
    };
    let redlock = |f: &[(&str, u8)]| Params {
        nodes: 5,
        faults: faults(f),
        ..P
    };
    vec![
        row("inventory-no-lock", "inventory", "read stock, check > 0, write stock − 1", "none", RES, Violates(RES),
            "Read-check-write is three steps; two buyers read the same stock and both sell the last unit.", P),
        row("inventory-local-mutex", "inventory", "read-check-write inside a per-process mutex, 2 app instances", "none", RES, Violates(RES),
            "A mutex only excludes threads of its own process; a second instance oversells anyway.", P),
        row("inventory-one-sql", "inventory", "UPDATE stock SET n = n − 1 WHERE n >= 1", "none", RES, Holds,
            "One conditional statement is atomic in the database: no lock needed.", P),
        row("inventory-optimistic", "inventory", "read version, UPDATE … WHERE version = v (bump), retry", "none", RES, Holds,
            "Version CAS rejects a write based on a stale read; the loser retries.", P),
        row("inventory-timestamp-cas", "inventory", "optimistic CAS with a coarse timestamp as version", "two writes in one tick", RES, Violates(RES),
            "A timestamp is not a version: two writes in one tick leave it unchanged and the stale CAS succeeds (ABA).", P),
        row("redis-get-set", "redis", "GET lock; if nil SET lock v; DEL", "none", MX, Violates(MX),
            "Check-then-set in two commands races: use one atomic SET NX.", P),
        row("redis-setnx-no-ttl", "redis", "SETNX lock v; DEL", "holder crash", MX_LIVE, Violates(LIVE),
            "A lock without TTL outlives a crashed holder: deadlock.", redis(&[("crash", 1)])),
        row("redis-setnx-expire", "redis", "SETNX lock v; then PEXPIRE lock ttl; DEL", "crash between SETNX and EXPIRE", MX_LIVE, Violates(LIVE),
            "SETNX and EXPIRE are two commands; a crash between them leaves a lock without TTL. Use SET NX PX.", redis(&[("crash", 1)])),
        row("redis-del-unconditional", "redis", "SET lock v NX PX ttl; DEL", "holder pause > TTL", MX_FR, Violates(MX_FR),
            "After its lease ran out, the holder's unconditional DEL removes the next holder's lock.", redis(&[("pause", 1)])),
        row("redis-get-then-del", "redis", "SET NX PX; release: GET, if mine DEL", "pause between GET and DEL", FR, Violates(FR),
            "The owner check and the DEL are two commands; the lock can change hands between them. Use the Lua script.", redis(&[("pause", 1)])),
        row("redis-timestamp-value", "redis", "SET lock <ms timestamp> NX PX; compare-and-delete", "two acquires in one ms, holder pause > TTL", FR, Violates(FR),
            "A timestamp is not an identity: two clients starting in one ms share it, and compare-and-delete deletes the other's lock (ABA). Use a UUID.", redis(&[("pause", 1)])),
        row("redis-lua", "redis", "SET lock uuid NX PX; compare-and-delete script", "none", MX_FR, Holds,
            "SET NX PX plus an atomic compare-and-delete is a correct lock while holders finish within the TTL.", P),
        row("redis-lua-pause", "redis", "SET lock uuid NX PX; compare-and-delete script", "holder pause > TTL", MX_FR, Violates(MX),
            "The script prevents foreign release, but a holder paused past its TTL still shares the critical section.", redis(&[("pause", 1)])),
        row("redis-lua-fenced", "redis", "SET NX PX + compare-and-delete + INCR fencing token checked by the resource", "holder pause > TTL", RES, Holds,
            "Fencing tokens make the resource refuse the paused holder's stale writes: the resource stays safe although the lock does not.", redis(&[("pause", 1)])),
        row("redis-reentrant", "redis", "Redisson hash scripts (HINCRBY hold counts) + watchdog", "none", REENT, Holds,
            "Hold counts per uuid:thread make the lock reentrant; the watchdog keeps it while the holder lives.", P),
        row("redis-reentrant-pause", "redis", "Redisson hash scripts + watchdog", "pause > TTL (watchdog paused too)", REENT, Violates(&[props::MUTEX, props::REENTRANCY]),
            "The watchdog runs in the paused process; a stop-the-world pause longer than the lease loses the lock — and a re-entry after it silently takes a fresh lock with count 1, so the inner unlock frees it while the outer hold is still counted.", redis(&[("pause", 1)])),
        row("redis-reentrant-thread-id", "redis", "Redisson hash scripts, field = thread id without per-process UUID", "none", REENT, Violates(&[props::MUTEX, props::FOREIGN]),
            "Thread ids repeat across processes: without the UUID, another process re-enters your lock and releases your hold (ABA).", P),
        row("redis-failover", "redis", "SET NX PX + compare-and-delete on a master with an async replica, Sentinel", "failover before replication", MX_FR, Violates(MX),
            "Replication is asynchronous: a failover can promote a replica that never saw the lock.", failover(1)),
        row("redis-failover-wait", "redis", "same + WAIT 1 before entering", "failover", MX_FR, Holds,
            "WAIT 1 is safe with one replica; with --replicas 2 Sentinel may promote the lagging one and the lock is lost again.", failover(1)),
        row("redlock", "redlock", "Redlock: SET NX PX on N nodes, majority, validity = TTL − elapsed − drift", "none", MX, Holds,
            "With independent nodes and no faults, a majority cannot be held twice.", redlock(&[])),
        row("redlock-restart", "redlock", "Redlock", "node crash + restart without persistence", MX, Violates(MX),
            "A node that restarts empty forgets the lock it granted; a second client can build a majority with it.", redlock(&[("restart", 1)])),
        row("redlock-delayed-restart", "redlock", "Redlock, crashed nodes stay down ≥ TTL", "node crash + delayed restart", MX, Holds,
            "Delaying the restart for a TTL lets every lock it held expire first.", redlock(&[("restart", 1)])),
        row("redlock-clock-jump", "redlock", "Redlock", "clock jump on one node", MX, Violates(MX),
            "Redlock trusts every node's clock; one jump expires a granted key early.", redlock(&[("jump", 1)])),
        row("redlock-pause", "redlock", "Redlock", "client pause > validity", MX, Violates(MX),
            "A paused holder outlives its validity; Redlock has no fencing token to stop it.", redlock(&[("pause", 1)])),
    ]
}

/// Why a request cannot be answered (exit code 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogError {
    /// No such id; the closest ids.
    UnknownId {
        /// What was asked.
        id: String,
        /// The nearest ids by edit distance.
        closest: Vec<&'static str>,
    },
    /// A bound out of range; names the flag.
    InvalidBound {
        /// The flag (`--clients`, …).
        flag: &'static str,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogError::UnknownId { id, closest } => {
                write!(
                    f,
                    "unknown scenario {id:?}; closest: {}",
                    closest.join(", ")
                )
            }
            CatalogError::InvalidBound { flag, reason } => write!(f, "invalid {flag}: {reason}"),
        }
    }
}

impl std::error::Error for CatalogError {}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The scenario with this id.
pub fn find(id: &str) -> Result<Scenario, CatalogError> {
    let all = scenarios();
    if let Some(s) = all.iter().find(|s| s.id == id) {
        return Ok(s.clone());
    }
    let mut ranked: Vec<(usize, &'static str)> =
        all.iter().map(|s| (levenshtein(id, s.id), s.id)).collect();
    ranked.sort();
    Err(CatalogError::UnknownId {
        id: id.to_string(),
        closest: ranked.iter().take(3).map(|r| r.1).collect(),
    })
}

/// Overrides of the defaults, as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--clients`.
    pub clients: Option<usize>,
    /// `--replicas`.
    pub replicas: Option<usize>,
    /// `--nodes`.
    pub nodes: Option<usize>,
    /// `--ttl`.
    pub ttl: Option<u64>,
    /// `--faults name=n,…` or `none`.
    pub faults: Option<String>,
}

/// The defaults with the overrides applied, validated.
pub fn params(s: &Scenario, o: &Overrides) -> Result<Params, CatalogError> {
    let bad = |flag, reason: String| Err(CatalogError::InvalidBound { flag, reason });
    let mut p = s.defaults.clone();
    if let Some(c) = o.clients {
        if !(1..=4).contains(&c) {
            return bad("--clients", format!("{c} is outside 1..=4"));
        }
        p.clients = c;
    }
    if let Some(r) = o.replicas {
        if s.defaults.replicas == 0 {
            return bad("--replicas", format!("{} has no replicas", s.id));
        }
        if !(1..=4).contains(&r) {
            return bad("--replicas", format!("{r} is outside 1..=4"));
        }
        p.replicas = r;
    }
    if let Some(n) = o.nodes {
        if s.family != "redlock" {
            return bad("--nodes", format!("{} is not a Redlock scenario", s.id));
        }
        if !(1..=8).contains(&n) {
            return bad("--nodes", format!("{n} is outside 1..=8"));
        }
        p.nodes = n;
    }
    if let Some(t) = o.ttl {
        if !(1..=8).contains(&t) {
            return bad("--ttl", format!("{t} is outside 1..=8 ticks"));
        }
        p.ttl = t;
    }
    if let Some(f) = &o.faults {
        let known = fault_names(s.family);
        let mut list = Vec::new();
        if f.trim() != "none" {
            for item in f.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let (name, n) = item.split_once('=').unwrap_or((item, "1"));
                if !known.contains(&name) {
                    return bad(
                        "--faults",
                        format!(
                            "unknown fault {name:?} for {}; known: {}",
                            s.id,
                            known.join(", ")
                        ),
                    );
                }
                let Ok(n) = n.parse::<u8>() else {
                    return bad(
                        "--faults",
                        format!("budget {n:?} of {name} is not a number"),
                    );
                };
                if n > 3 {
                    return bad("--faults", format!("budget {n} of {name} is above 3"));
                }
                list.push((name.to_string(), n));
            }
        }
        p.faults = list;
    }
    Ok(p)
}

fn budget(p: &Params, name: &str) -> u8 {
    p.faults.iter().filter(|f| f.0 == name).map(|f| f.1).sum()
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No violation within the bounds (exhaustive).
    Holds,
    /// These properties have counterexamples.
    Violated(Vec<&'static str>),
    /// A limit stopped the search first.
    Unknown,
}

/// One step of a story.
#[derive(Clone, Debug, Serialize)]
pub struct StoryStep {
    /// 1-based.
    pub n: usize,
    /// What happened.
    pub action: String,
    /// Whether it was an injected fault.
    pub fault: bool,
    /// The state of every client, node and the resource after it.
    pub state: Vec<String>,
}

/// A counterexample told as a story.
#[derive(Clone, Debug, Serialize)]
pub struct Story {
    /// The violated property.
    pub property: &'static str,
    /// The state before the first step.
    pub initial: Vec<String>,
    /// The steps (a shortest path).
    pub steps: Vec<StoryStep>,
    /// Why it broke.
    pub closing: String,
}

/// The answer for one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The scenario id.
    pub id: &'static str,
    /// The bounds used.
    pub params: Params,
    /// The verdict.
    pub verdict: Verdict,
    /// What the catalog expects at default bounds.
    pub expected: Expected,
    /// Whether `verdict` is `expected`.
    pub matches_expected: bool,
    /// The search's counters.
    pub stats: Stats,
    /// One shortest story per violated property.
    pub stories: Vec<Story>,
}

/// The model of a scenario with given bounds, ready to search or serve.
#[derive(Clone, Debug)]
pub enum AnyModel {
    /// An inventory model.
    Inventory(InventoryModel),
    /// A Redis lock model.
    Redis(RedisLockModel),
    /// A Redlock model.
    Redlock(RedlockModel),
}

/// Builds the model of `s` with `p`.
pub fn build(s: &Scenario, p: &Params) -> AnyModel {
    let clients = p.clients;
    match s.family {
        "inventory" => {
            let protocol = match s.id {
                "inventory-no-lock" => InventoryProtocol::NoLock,
                "inventory-local-mutex" => InventoryProtocol::LocalMutex,
                "inventory-one-sql" => InventoryProtocol::OneSql,
                "inventory-optimistic" => InventoryProtocol::Optimistic,
                _ => InventoryProtocol::TimestampCas,
            };
            AnyModel::Inventory(InventoryModel {
                protocol,
                clients,
                initial: clients as i64 - 1,
                horizon: 2,
            })
        }
        "redlock" => AnyModel::Redlock(RedlockModel {
            nodes: p.nodes,
            clients,
            ttl: p.ttl,
            drift: 1,
            attempts: 2,
            restarts: budget(p, "restart"),
            restart_delay: if s.id == "redlock-delayed-restart" {
                p.ttl
            } else {
                0
            },
            jumps: budget(p, "jump"),
            pauses: budget(p, "pause"),
            horizon: p.ttl + 2,
        }),
        _ => {
            let (protocol, value) = match s.id {
                "redis-get-set" => (Protocol::GetSet, ValueKind::Unique),
                "redis-setnx-no-ttl" => (Protocol::SetNx, ValueKind::Unique),
                "redis-setnx-expire" => (Protocol::SetNxExpire, ValueKind::Unique),
                "redis-del-unconditional" => (Protocol::SetPxDel, ValueKind::Unique),
                "redis-get-then-del" => (Protocol::SetPxGetDel, ValueKind::Unique),
                "redis-timestamp-value" => (Protocol::SetPxLua, ValueKind::Timestamp),
                "redis-reentrant" | "redis-reentrant-pause" => {
                    (Protocol::Redisson, ValueKind::Unique)
                }
                "redis-reentrant-thread-id" => (Protocol::Redisson, ValueKind::ThreadId),
                _ => (Protocol::SetPxLua, ValueKind::Unique),
            };
            AnyModel::Redis(RedisLockModel {
                protocol,
                value,
                clients,
                ttl: p.ttl,
                replicas: p.replicas,
                wait: (s.id == "redis-failover-wait").then_some(1),
                fencing: s.id == "redis-lua-fenced",
                pauses: budget(p, "pause"),
                crashes: budget(p, "crash"),
                failovers: budget(p, "failover"),
                horizon: 2 * p.ttl + 1,
                properties: s.properties,
            })
        }
    }
}

fn tell<M>(
    model: &M,
    s: &Scenario,
    p: Params,
    limits: Limits,
    progress: &mut dyn FnMut(&Stats),
) -> Report
where
    M: Narrate,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let out = bfs(model, limits, progress);
    let stories: Vec<Story> = out
        .discoveries
        .iter()
        .map(|d| {
            let mut steps = Vec::new();
            for w in d.path.windows(2) {
                if let (prev, (Some(a), next)) = (&w[0].1, &w[1]) {
                    steps.push(StoryStep {
                        n: steps.len() + 1,
                        action: model.describe_action(prev, a),
                        fault: model.is_fault(a),
                        state: model.describe_state(next),
                    });
                }
            }
            Story {
                property: d.property,
                initial: d
                    .path
                    .first()
                    .map(|(_, s)| model.describe_state(s))
                    .unwrap_or_default(),
                steps,
                closing: model.why(d.property, &d.path),
            }
        })
        .collect();
    let verdict = if !stories.is_empty() {
        // A violation found is proven by its path, whether or not the search finished.
        Verdict::Violated(stories.iter().map(|s| s.property).collect())
    } else if out.complete {
        Verdict::Holds
    } else {
        Verdict::Unknown
    };
    let matches_expected = match (&verdict, s.expected) {
        (Verdict::Holds, Expected::Holds) => true,
        (Verdict::Violated(v), Expected::Violates(e)) => {
            let mut a = v.clone();
            let mut b = e.to_vec();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        }
        _ => false,
    };
    Report {
        id: s.id,
        params: p,
        verdict,
        expected: s.expected,
        matches_expected,
        stats: out.stats,
        stories,
    }
}

/// Checks scenario `id` with the given overrides.
pub fn check(
    id: &str,
    o: &Overrides,
    limits: Limits,
    progress: &mut dyn FnMut(&Stats),
) -> Result<Report, CatalogError> {
    let s = find(id)?;
    let p = params(&s, o)?;
    Ok(match build(&s, &p) {
        AnyModel::Inventory(m) => tell(&m, &s, p, limits, progress),
        AnyModel::Redis(m) => tell(&m, &s, p, limits, progress),
        AnyModel::Redlock(m) => tell(&m, &s, p, limits, progress),
    })
}

/// Serves stateright's Explorer for the scenario on `addr`; blocks while serving.
pub fn explore(id: &str, o: &Overrides, addr: std::net::SocketAddr) -> Result<(), CatalogError> {
    use stateright::Model;
    let s = find(id)?;
    let p = params(&s, o)?;
    match build(&s, &p) {
        AnyModel::Inventory(m) => drop(m.checker().serve(addr)),
        AnyModel::Redis(m) => drop(m.checker().serve(addr)),
        AnyModel::Redlock(m) => drop(m.checker().serve(addr)),
    }
    Ok(())
}
