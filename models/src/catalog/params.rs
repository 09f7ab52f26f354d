//! The command line's bounds applied to a scenario's defaults, each checked against
//! what the scenario's family can model.

use crate::registry::Fault;
use crate::scenario::{Params, Scenario};

use super::error::CatalogError;

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
    /// `check --progress --once`: judge starvation too with clients that lock once
    /// (each request granted in the end), on the graph eventually-free is judged on.
    pub once: bool,
}

/// The largest bounds a model can represent. Clients and Redlock nodes are bits of a
/// `u8` in the Redlock model (who tried, who got which node), and every model names a
/// client or node by a `u8`; fault budgets are `u8` counters. Whether a bound finishes
/// in time or memory is the search's to say (`unknown` at `--max-states`, `--timeout`
/// or `--memory`), not a reason to refuse it here.
const MAX_CLIENTS: usize = 8;
const MAX_NODES: usize = 8;
const MAX_REPLICAS: usize = 8;
const MAX_TTL: u64 = 64;
const MAX_BUDGET: u8 = 8;

/// The defaults with the overrides applied, validated.
pub fn params(s: &Scenario, o: &Overrides) -> Result<Params, CatalogError> {
    let bad = |flag, reason: String| Err(CatalogError::InvalidBound { flag, reason });
    let mut p = s.defaults.clone();
    if let Some(c) = o.clients {
        if !(1..=MAX_CLIENTS).contains(&c) {
            return bad("--clients", format!("{c} is outside 1..={MAX_CLIENTS}"));
        }
        p.clients = c;
    }
    if let Some(r) = o.replicas {
        if s.defaults.replicas == 0 {
            return bad("--replicas", format!("{} has no replicas", s.id));
        }
        if !(1..=MAX_REPLICAS).contains(&r) {
            return bad("--replicas", format!("{r} is outside 1..={MAX_REPLICAS}"));
        }
        p.replicas = r;
    }
    if let Some(n) = o.nodes {
        // Only rows with independent nodes to count (Redlock's) take the bound.
        if s.defaults.nodes == 0 {
            return bad("--nodes", format!("{} is not a Redlock scenario", s.id));
        }
        if !(1..=MAX_NODES).contains(&n) {
            return bad("--nodes", format!("{n} is outside 1..={MAX_NODES}"));
        }
        p.nodes = n;
    }
    if let Some(t) = o.ttl {
        if !(1..=MAX_TTL).contains(&t) {
            return bad("--ttl", format!("{t} is outside 1..={MAX_TTL} ticks"));
        }
        p.ttl = t;
    }
    if let Some(f) = &o.faults {
        p.faults = faults(s, f).map_err(|reason| CatalogError::InvalidBound {
            flag: "--faults",
            reason,
        })?;
    }
    Ok(p)
}

/// Parses `name=n,…` (a bare name is a budget of 1) or `none` into budgets of faults
/// the scenario's family understands.
fn faults(s: &Scenario, text: &str) -> Result<Vec<(Fault, u8)>, String> {
    let known = s.family.faults();
    let mut list = Vec::new();
    if text.trim() == "none" {
        return Ok(list);
    }
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, n) = item.split_once('=').unwrap_or((item, "1"));
        let fault = name
            .parse::<Fault>()
            .ok()
            .filter(|f| known.contains(f))
            .ok_or_else(|| {
                let names: Vec<&str> = known.iter().map(|f| f.name()).collect();
                format!(
                    "unknown fault {name:?} for {}; known: {}",
                    s.id,
                    names.join(", ")
                )
            })?;
        let Ok(n) = n.parse::<u8>() else {
            return Err(format!("budget {n:?} of {name} is not a number"));
        };
        if n > MAX_BUDGET {
            return Err(format!("budget {n} of {name} is above {MAX_BUDGET}"));
        }
        list.push((fault, n));
    }
    Ok(list)
}
