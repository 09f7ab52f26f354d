//! The Redis family's servers for one run, started as child processes with temp data
//! dirs, each on a host of its own (or all on 127.0.0.1 with leased ports:
//! [`crate::placement`]): one node; a master with replicas watched by three
//! Sentinels; or independent Redlock nodes. Sentinel's failover is followed here: the
//! proxy in front of the primary is pointed at the master Sentinel names, as a
//! Sentinel-aware client would reconnect. A split-brain topology cannot do without
//! hosts ([`Lab`]): the master is cut off from its Sentinels and replicas while a
//! client pinned to it still reaches it.

use std::path::Path;
use std::time::{Duration, Instant};

use locklab_servers::net::Lab;
use locklab_servers::{RedisServer, Sentinel, Server, ServerConfig, ServerError};
use locklab_traces::format::{Injected, What};
use serde_json::json;

use super::actions::RedisAction;
use crate::log::Log;
use crate::placement::{self, Net};
use crate::proxy::ProxyControl;
use crate::schedule::FamilyAction;
use crate::schedule::Target;
use crate::servers::Servers;
use crate::RunError;

/// The shape of the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One Redis server, `redis`.
    Single,
    /// `master` (node 0) with `replicas` replicas (`replica1`, …) and three Sentinels.
    Sentinel {
        /// Replicas behind the master.
        replicas: usize,
        /// `replica1` replicates as its own ACL user (so cutting the `default` user's
        /// replication leaves it connected) and has `replica-priority 0` (so Sentinel
        /// never promotes it): the other replicas are the ones that can lag, and one of
        /// them is what a failover promotes.
        replica1_apart: bool,
        /// The split-brain topology: its hosts are required, not only preferred.
        split: Option<SplitBrain>,
    },
    /// `n0` … independent nodes.
    Redlock {
        /// How many.
        nodes: usize,
        /// Every node with `appendonly yes` and `appendfsync everysec`: a node
        /// restarted on its data dir loads its keys from the append-only file.
        aof: bool,
    },
}

/// A split-brain topology: every server (master, replicas, three Sentinels) on a host of
/// its own in a lab, and two endpoints in front of the master — one that follows
/// Sentinel (every client's but one) and one that stays with the first master (the
/// pinned client's: the client cut off on the master's side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitBrain {
    /// The client that stays with the first master.
    pub pinned: u32,
    /// `min-replicas-to-write 1` with this `min-replicas-max-lag` (s) on every server.
    pub min_replicas_lag_s: Option<u32>,
}

/// The ACL user `replica1` replicates as when it is set apart.
const REPL_USER: &str = "repl on >locklab ~* &* +@all";

/// The Sentinel master name.
pub const MASTER_NAME: &str = "mymaster";

/// Running Redis servers. Dropping it kills every one of them.
pub struct RedisCluster {
    names: Vec<String>,
    servers: Vec<RedisServer>,
    sentinels: Vec<Sentinel>,
    primary: Option<usize>,
    /// The master address the Sentinels named at the last tick.
    followed: Option<String>,
    failed_over: bool,
    split: Option<SplitBrain>,
    /// The master is cut off from its Sentinels now (or was).
    isolated: bool,
    /// Independent Redlock nodes.
    redlock: bool,
    /// The hosts of a split-brain topology; dropped after the servers (last field).
    lab: Option<Lab>,
}

fn start(config: ServerConfig) -> Result<RedisServer, RunError> {
    RedisServer::start_config(config).map_err(environment)
}

fn environment(e: ServerError) -> RunError {
    RunError::Environment(e.to_string())
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) -> Result<(), RunError> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(RunError::Unreliable(format!(
        "{what} not ready after {timeout:?}"
    )))
}

impl RedisCluster {
    /// The Sentinels' addresses (none outside the failover shape): not proxied, no
    /// fault cuts them.
    pub fn sentinel_addrs(&self) -> Vec<String> {
        self.sentinels.iter().map(|s| s.addr()).collect()
    }

    /// Whether these are independent Redlock nodes.
    pub fn is_redlock(&self) -> bool {
        self.redlock
    }

    /// The lab of a Sentinel topology: a host per server (master, replicas, three
    /// Sentinels); a split brain cannot do without it.
    fn lab(replicas: usize, split: bool, net: Net) -> Result<Option<Lab>, RunError> {
        let mut names = vec!["master".to_string()];
        names.extend((1..=replicas).map(|i| format!("replica{i}")));
        names.extend((1..=3).map(|i| format!("sentinel{i}")));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let needed_for = split.then_some("a split brain needs each server on a host of its own");
        placement::lab(&names, net, needed_for)
    }

    fn sentinel(
        replicas: usize,
        apart: bool,
        fake_clock: bool,
        split: Option<SplitBrain>,
        net: Net,
    ) -> Result<Self, RunError> {
        let lab = Self::lab(replicas, split.is_some(), net)?;
        let host = |name: &str| lab.as_ref().and_then(|l| l.host(name).ok().cloned());
        // Every server knows the replication user: any of them may become master.
        let config = |name: &str| {
            let mut c = ServerConfig {
                fake_clock,
                host: host(name),
                ..ServerConfig::default()
            };
            if let Some(lag) = split.and_then(|s| s.min_replicas_lag_s) {
                // One configuration for every server, as deployments have it.
                c.args.extend([
                    "--min-replicas-to-write".to_string(),
                    "1".into(),
                    "--min-replicas-max-lag".into(),
                    lag.to_string(),
                ]);
            }
            if apart {
                // Each word its own argument: redis-server joins them into one
                // configuration line.
                c.args = std::iter::once("--user")
                    .chain(REPL_USER.split(' '))
                    .map(String::from)
                    .collect();
            }
            c
        };
        let master = start(config("master"))?;
        let mport = master.port().to_string();
        let mip = master.process().ip();
        let mut names = vec!["master".to_string()];
        let mut servers = vec![master];
        for i in 1..=replicas {
            let mut c = config(&format!("replica{i}"));
            c.args
                .extend(["--replicaof".into(), mip.to_string(), mport.clone()]);
            if i == 1 && apart {
                c.args.extend(
                    [
                        "--masteruser",
                        "repl",
                        "--masterauth",
                        "locklab",
                        "--replica-priority",
                        "0",
                    ]
                    .map(String::from),
                );
            }
            names.push(format!("replica{i}"));
            servers.push(start(c)?);
        }
        let mut sentinels = Vec::new();
        for i in 1..=3 {
            let h = host(&format!("sentinel{i}"));
            sentinels.push(
                Sentinel::start_on(h.as_ref(), MASTER_NAME, mip, servers[0].port())
                    .map_err(environment)?,
            );
        }
        for (name, s) in names.iter().zip(&servers).skip(1) {
            wait_until(
                &format!("{name}'s replication link"),
                Duration::from_secs(10),
                || s.info("replication").contains("master_link_status:up"),
            )?;
        }
        let replicas = replicas.to_string();
        for s in &sentinels {
            wait_until("the Sentinels' quorum", Duration::from_secs(15), || {
                s.master_field("num-other-sentinels").as_deref() == Some("2")
                    && s.master_field("num-slaves").as_deref() == Some(&*replicas)
            })?;
        }
        Ok(RedisCluster {
            names,
            servers,
            sentinels,
            primary: Some(0),
            followed: None,
            failed_over: false,
            split,
            isolated: false,
            redlock: false,
            lab,
        })
    }

    /// Cuts the master's host off from every replica's and Sentinel's (both ways).
    fn isolate(&mut self) -> Result<(), String> {
        let lab = self
            .lab
            .as_ref()
            .ok_or("an isolation needs the split-brain topology's hosts")?;
        lab.isolate("master").map_err(|e| e.to_string())?;
        self.isolated = true;
        Ok(())
    }

    /// The Redis version, for the header.
    fn redis_version(&self) -> String {
        self.servers
            .first()
            .map(|s| s.info("server"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string()
    }

    fn resolve(&self, target: Target) -> Result<&RedisServer, String> {
        let i = match target {
            Target::Node(i) => i,
            Target::Primary => self.primary.ok_or("no primary")?,
            other => return Err(format!("{other} is not a server")),
        };
        self.servers.get(i).ok_or_else(|| format!("no node {i}"))
    }
}

impl Servers for RedisCluster {
    type Shape = Shape;
    type Action = RedisAction;

    fn start(shape: &Shape, fake_clock: bool, net: Net) -> Result<Self, RunError> {
        if let Shape::Sentinel {
            replicas,
            replica1_apart,
            split,
        } = *shape
        {
            return Self::sentinel(replicas, replica1_apart, fake_clock, split, net);
        }
        let names: Vec<String> = match *shape {
            Shape::Redlock { nodes, .. } => (0..nodes).map(|i| format!("n{i}")).collect(),
            _ => vec!["redis".to_string()],
        };
        let lab = placement::lab(
            &names.iter().map(String::as_str).collect::<Vec<_>>(),
            net,
            None,
        )?;
        let config = |i: usize| ServerConfig {
            fake_clock,
            host: lab.as_ref().and_then(|l| l.hosts().get(i).cloned()),
            ..ServerConfig::default()
        };
        let (servers, primary) = match *shape {
            Shape::Redlock { nodes, aof } => {
                let mut servers = Vec::new();
                for i in 0..nodes {
                    let mut c = config(i);
                    if aof {
                        // After the harness's own `--appendonly no`: the last wins.
                        c.args.extend(
                            ["--appendonly", "yes", "--appendfsync", "everysec"].map(String::from),
                        );
                    }
                    servers.push(start(c)?);
                }
                (servers, None)
            }
            _ => (vec![start(config(0))?], Some(0)),
        };
        Ok(RedisCluster {
            names,
            servers,
            sentinels: Vec::new(),
            primary,
            followed: None,
            failed_over: false,
            split: None,
            isolated: false,
            redlock: matches!(shape, Shape::Redlock { .. }),
            lab,
        })
    }

    fn node_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn node(&mut self, i: usize) -> Option<&mut dyn Server> {
        self.servers.get_mut(i).map(|s| s as &mut dyn Server)
    }

    fn primary(&self) -> Option<usize> {
        self.primary
    }

    fn client_nodes(&self) -> Vec<usize> {
        match (self.primary, self.split) {
            // The first proxy in front of node 0 follows the master through failovers;
            // a split brain's second stays with the first master.
            (Some(_), Some(_)) => vec![0, 0],
            (Some(_), None) => vec![0],
            (None, _) => (0..self.servers.len()).collect(),
        }
    }

    fn failed_over(&self) -> bool {
        self.failed_over
    }

    /// In a split brain, the pinned client reaches only the first master, the others
    /// only Sentinel's.
    fn addrs_for(&self, client: u32, addrs: &[String]) -> Vec<String> {
        match (self.split, addrs) {
            (Some(s), [_, pinned]) if client == s.pinned => vec![pinned.clone()],
            (Some(_), [follower, _]) => vec![follower.clone()],
            _ => addrs.to_vec(),
        }
    }

    fn holds_key(&self, i: usize, key: &str) -> bool {
        self.servers
            .get(i)
            .is_some_and(|s| s.cli(&["EXISTS", key]) == "1")
    }

    fn set_clock(&mut self, i: usize, offset: &str) -> Result<(), String> {
        let s = self.servers.get(i).ok_or_else(|| format!("no node {i}"))?;
        s.set_clock(offset).map_err(|e| e.to_string())
    }

    fn apply(&mut self, action: &RedisAction) -> Result<(), String> {
        match action {
            RedisAction::Isolate(_) => return self.isolate(),
            RedisAction::HealIsolation(_) => {
                let lab = self.lab.as_ref().ok_or("no hosts to heal")?;
                return lab.heal().map_err(|e| e.to_string());
            }
            _ => {}
        }
        let master = self.resolve(action.target())?;
        action.apply(master)
    }

    fn tick(&mut self, proxies: &[(usize, ProxyControl)], log: &Log) {
        let Some(addr) = self.sentinels.iter().find_map(Sentinel::master_addr) else {
            return;
        };
        if self.followed.as_deref() == Some(addr.as_str()) {
            return;
        }
        if self.followed.is_some() {
            self.failed_over = true;
            if let Some((_, proxy)) = proxies.iter().find(|(n, _)| *n == 0) {
                proxy.retarget(&addr);
                // The clients outside a split were cut off from the old master; the new
                // one they reach.
                if self.split.is_some() {
                    proxy.heal();
                }
            }
            let new = self.servers.iter().position(|s| s.addr() == addr);
            self.primary = new.or(self.primary);
            let name = new.map_or_else(|| addr.clone(), |i| self.names[i].clone());
            let note = match self.split {
                Some(s) => format!(
                    "Sentinel promoted {name}; the clients outside the cut now reach it, c{} still reaches the first master",
                    s.pinned
                ),
                None => format!("Sentinel promoted {name}; clients now reach it"),
            };
            log.nemesis(
                // Endpoint 0 follows Sentinel: from here on it reaches `name`, which is
                // how a drawing of the run tells the old master from the new.
                Injected::new(What::Failover { endpoint: Some(0) }, name).with("addr", json!(addr)),
                Some(note),
            );
        }
        self.followed = Some(addr);
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self
            .names
            .iter()
            .zip(&self.servers)
            .map(|(n, s)| format!("{n} {}", s.addr()))
            .collect();
        let mut text = list.join(", ");
        if !self.sentinels.is_empty() {
            text.push_str(&format!(
                " + sentinels on {}",
                self.sentinel_addrs().join(", ")
            ));
        }
        if self.lab.is_some() {
            text.push_str(" (each on a host of its own)");
        }
        text
    }

    fn tools(&self) -> Vec<(String, String)> {
        vec![("redis".into(), self.redis_version())]
    }

    fn spoiled(&self, primary_killed: bool) -> Option<String> {
        for (i, s) in self.sentinels.iter().enumerate() {
            if s.tilted() {
                return Some(format!("sentinel {} entered TILT mode", i + 1));
            }
        }
        if !self.sentinels.is_empty() && (primary_killed || self.isolated) && !self.failed_over {
            return Some("Sentinel did not fail over during the run".into());
        }
        None
    }

    fn keep_logs(&self, dir: &Path) {
        for (name, s) in self.names.iter().zip(&self.servers) {
            let _ = std::fs::write(dir.join(format!("{name}.log")), s.log());
        }
        for (i, s) in self.sentinels.iter().enumerate() {
            let _ = std::fs::write(dir.join(format!("sentinel{}.log", i + 1)), s.log());
        }
    }
}
