//! The Redis family's servers for one run, started as child processes on free loopback
//! ports with temp data dirs: one node; a master with replicas watched by three
//! Sentinels; or independent Redlock nodes. Sentinel's failover is followed here: the
//! proxy in front of the primary is pointed at the master Sentinel names, as a
//! Sentinel-aware client would reconnect.

use std::path::Path;
use std::time::{Duration, Instant};

use locklab_servers::{RedisServer, Sentinel, Server, ServerConfig, ServerError};
use serde_json::json;

use super::actions::RedisAction;
use crate::log::Log;
use crate::proxy::ProxyControl;
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
    },
    /// `n0` … independent nodes.
    Redlock {
        /// How many.
        nodes: usize,
    },
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
        self.sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect()
    }

    fn sentinel(replicas: usize, apart: bool, fake_clock: bool) -> Result<Self, RunError> {
        // Every server knows the replication user: any of them may become master.
        let config = || {
            let mut c = ServerConfig {
                fake_clock,
                ..ServerConfig::default()
            };
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
        let master = start(config())?;
        let mport = master.port().to_string();
        let mut names = vec!["master".to_string()];
        let mut servers = vec![master];
        for i in 1..=replicas {
            let mut c = config();
            c.args
                .extend(["--replicaof".into(), "127.0.0.1".into(), mport.clone()]);
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
        for _ in 0..3 {
            sentinels.push(Sentinel::start(MASTER_NAME, servers[0].port()).map_err(environment)?);
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
        })
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

    fn start(shape: &Shape, fake_clock: bool) -> Result<Self, RunError> {
        let config = || ServerConfig {
            fake_clock,
            ..ServerConfig::default()
        };
        let (names, servers, primary) = match *shape {
            Shape::Sentinel {
                replicas,
                replica1_apart,
            } => return Self::sentinel(replicas, replica1_apart, fake_clock),
            Shape::Single => (vec!["redis".to_string()], vec![start(config())?], Some(0)),
            Shape::Redlock { nodes } => {
                let mut servers = Vec::new();
                for _ in 0..nodes {
                    servers.push(start(config())?);
                }
                ((0..nodes).map(|i| format!("n{i}")).collect(), servers, None)
            }
        };
        Ok(RedisCluster {
            names,
            servers,
            sentinels: Vec::new(),
            primary,
            followed: None,
            failed_over: false,
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
        match self.primary {
            // The proxy in front of node 0 follows the master through failovers.
            Some(_) => vec![0],
            None => (0..self.servers.len()).collect(),
        }
    }

    fn endpoint_names(&self) -> Vec<String> {
        match self.primary {
            Some(_) => vec!["Sentinel's master".into()],
            None => self.names.clone(),
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
        let master = self.resolve(match action {
            RedisAction::CutReplication(t) | RedisAction::HealReplication(t) => *t,
        })?;
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
            }
            let new = self.servers.iter().position(|s| s.addr() == addr);
            self.primary = new.or(self.primary);
            let name = new.map_or_else(|| addr.clone(), |i| self.names[i].clone());
            log.nemesis(
                json!({"fault": "failover", "target": name, "addr": addr}),
                Some(format!("Sentinel promoted {name}; clients now reach it")),
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
            let ports: Vec<String> = self
                .sentinels
                .iter()
                .map(|s| s.port().to_string())
                .collect();
            text.push_str(&format!(" + sentinels on {}", ports.join(", ")));
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
        if !self.sentinels.is_empty() && primary_killed && !self.failed_over {
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
