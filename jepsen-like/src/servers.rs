//! A family's servers for one run — Jepsen's DB role: start a shape, process control by
//! typed target, the family's own faults, what the servers tell of themselves. The
//! runner and the nemesis know only this trait; each family implements it in its
//! folder (`zk/cluster.rs`). What clients do with the servers is [`crate::family`]'s.

use std::fmt;
use std::path::Path;

use locklab_servers::Server;

use crate::log::Log;
use crate::placement::Net;
use crate::proxy::ProxyControl;
use crate::schedule::FamilyAction;
use crate::RunError;

/// A family's running servers for one run. Dropping it kills every one of them.
///
/// Started on the thread that will own the servers for the whole run (each server dies
/// with the thread that started it).
pub trait Servers: Send + Sized + 'static {
    /// The shapes this family's servers come in (Redis: single, Sentinel, Redlock).
    type Shape: Clone + fmt::Debug + Send + Sync;
    /// The faults only this family knows.
    type Action: FamilyAction;

    /// Starts the servers; `fake_clock`: lock servers run under libfaketime; `net`:
    /// each on a host of its own or on loopback ([`crate::placement::lab`]).
    fn start(shape: &Self::Shape, fake_clock: bool, net: Net) -> Result<Self, RunError>;

    /// The lock servers' names by index (`master`, `replica1`; `n0` …), for the history.
    fn node_names(&self) -> Vec<String>;

    /// Lock server `i`, for process control.
    fn node(&mut self, i: usize) -> Option<&mut dyn Server>;

    /// The node clients write to now, if the family has one (Redlock has none).
    fn primary(&self) -> Option<usize>;

    /// The nodes the clients connect to, in the order their locks expect; the harness
    /// puts a proxy in front of each.
    fn client_nodes(&self) -> Vec<usize>;

    /// What each of [`Servers::client_nodes`] is to a client, for the history header
    /// and the run's drawing: by default the node's name.
    fn endpoint_names(&self) -> Vec<String> {
        let names = self.node_names();
        self.client_nodes()
            .iter()
            .map(|&i| names.get(i).cloned().unwrap_or_else(|| format!("node {i}")))
            .collect()
    }

    /// Whether node `i` holds the lock record `key` now.
    fn holds_key(&self, i: usize, key: &str) -> bool;

    /// Sets node `i`'s clock (`"+15"`: 15 s ahead), for families whose servers run
    /// under libfaketime.
    fn set_clock(&mut self, _i: usize, _offset: &str) -> Result<(), String> {
        Err("this family's servers do not run under libfaketime".into())
    }

    /// Carries out a family fault.
    fn apply(&mut self, action: &Self::Action) -> Result<(), String>;

    /// Whether the servers' own failover has put a new primary in place (Sentinel
    /// promoted a replica) during the run.
    fn failed_over(&self) -> bool {
        false
    }

    /// The endpoints client `client` connects to, of the run's `addrs` (one per client
    /// node): all of them, unless the topology gives clients different sides (a split
    /// brain's pinned client).
    fn addrs_for(&self, _client: u32, addrs: &[String]) -> Vec<String> {
        addrs.to_vec()
    }

    /// Called every 100 ms during the workload: a family follows what its own
    /// machinery decides (Redis: Sentinel's failover, retargeting the proxy in front
    /// of the primary), recording it in the history.
    fn tick(&mut self, _proxies: &[(usize, ProxyControl)], _log: &Log) {}

    /// Free text for the history header.
    fn describe(&self) -> String;

    /// Tool versions for the header (`redis` → `7.0.15`).
    fn tools(&self) -> Vec<(String, String)>;

    /// Why this attempt says nothing and must be retried (Sentinel entered TILT; a
    /// failover never came although the nemesis killed the primary), after the
    /// workload.
    fn spoiled(&self, _primary_killed: bool) -> Option<String> {
        None
    }

    /// Writes every server's log into `dir`.
    fn keep_logs(&self, dir: &Path);
}
