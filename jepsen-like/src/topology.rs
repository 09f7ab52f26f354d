//! The servers of one run, started as child processes on free loopback ports with temp
//! data dirs: one node; a master with replicas watched by three Sentinels; or
//! independent Redlock nodes — plus the resource server that no fault reaches. Clients
//! reach each lock server through a [`Proxy`] so the nemesis can partition them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use locklab_implementations::testing::{RedisServer, ServerConfig, ServerError};

use crate::proxy::{Proxy, ProxyControl};
use crate::RunError;

/// The shape of the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One Redis server, `redis`.
    Single,
    /// `master` with `replicas` replicas (`replica1`, …) and three Sentinels.
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

/// Running servers. Dropping it kills every one of them.
pub struct Topology {
    /// The lock servers by name (the nemesis's targets).
    pub servers: BTreeMap<String, RedisServer>,
    /// The Sentinels (never faulted).
    pub sentinels: Vec<RedisServer>,
    /// The resource server (never faulted).
    pub resource: RedisServer,
    /// The lock endpoints the clients use, in order (`redis`; `master`; `n0`…).
    pub endpoints: Vec<(String, Proxy)>,
    /// The shape.
    pub shape: Shape,
}

fn start(config: ServerConfig) -> Result<RedisServer, RunError> {
    RedisServer::start_config(config).map_err(|e| match e {
        ServerError::Missing(_) => RunError::Environment(e.to_string()),
        other => RunError::Environment(other.to_string()),
    })
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

impl Topology {
    /// Starts the servers (blocking: call it from the thread that will own them, never
    /// from a short-lived one, since each server dies with the thread that started it).
    /// `fake_clock`: lock servers run under libfaketime.
    pub fn start_servers(shape: Shape, fake_clock: bool) -> Result<Topology, RunError> {
        let lock_config = || ServerConfig {
            fake_clock,
            ..ServerConfig::default()
        };
        let resource = start(ServerConfig::default())?;
        let mut servers = BTreeMap::new();
        let mut sentinels = Vec::new();
        match shape {
            Shape::Single => {
                servers.insert("redis".to_string(), start(lock_config())?);
            }
            Shape::Redlock { nodes } => {
                for i in 0..nodes {
                    servers.insert(format!("n{i}"), start(lock_config())?);
                }
            }
            Shape::Sentinel {
                replicas,
                replica1_apart,
            } => {
                // Every server knows the replication user: any of them may become master.
                let lock_config = || {
                    let mut c = lock_config();
                    if replica1_apart {
                        // Each word its own argument: redis-server joins them into one
                        // configuration line.
                        c.args = std::iter::once("--user")
                            .chain(REPL_USER.split(' '))
                            .map(String::from)
                            .collect();
                    }
                    c
                };
                let master = start(lock_config())?;
                let mport = master.port().to_string();
                for i in 1..=replicas {
                    let mut c = lock_config();
                    c.args
                        .extend(["--replicaof".into(), "127.0.0.1".into(), mport.clone()]);
                    if i == 1 && replica1_apart {
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
                    servers.insert(format!("replica{i}"), start(c)?);
                }
                let conf = format!(
                    "sentinel monitor {MASTER_NAME} 127.0.0.1 {mport} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                     sentinel failover-timeout {MASTER_NAME} 3000"
                );
                for _ in 0..3 {
                    sentinels.push(start(ServerConfig {
                        sentinel: Some(conf.clone()),
                        ..ServerConfig::default()
                    })?);
                }
                servers.insert("master".to_string(), master);
                for (name, s) in &servers {
                    if name.starts_with("replica") {
                        wait_until(
                            &format!("{name}'s replication link"),
                            Duration::from_secs(10),
                            || s.info("replication").contains("master_link_status:up"),
                        )?;
                    }
                }
                for s in &sentinels {
                    wait_until("the Sentinels' quorum", Duration::from_secs(15), || {
                        let info = s.cli(&["SENTINEL", "master", MASTER_NAME]);
                        let lines: Vec<&str> = info.lines().collect();
                        let field = |name: &str| {
                            lines
                                .iter()
                                .position(|l| *l == name)
                                .and_then(|i| lines.get(i + 1))
                                .copied()
                        };
                        field("num-other-sentinels") == Some("2")
                            && field("num-slaves") == Some(&*replicas.to_string())
                    })?;
                }
            }
        }
        Ok(Topology {
            servers,
            sentinels,
            resource,
            endpoints: Vec::new(),
            shape,
        })
    }

    /// Puts a proxy in front of each lock endpoint (inside the runtime).
    pub async fn start_proxies(&mut self) -> Result<(), RunError> {
        let names: Vec<String> = match self.shape {
            Shape::Single => vec!["redis".into()],
            Shape::Sentinel { .. } => vec!["master".into()],
            Shape::Redlock { .. } => self.servers.keys().cloned().collect(),
        };
        for name in names {
            let Some(server) = self.servers.get(&name) else {
                continue;
            };
            let proxy = Proxy::start(&server.addr())
                .await
                .map_err(|e| RunError::Environment(format!("proxy for {name}: {e}")))?;
            self.endpoints.push((name, proxy));
        }
        Ok(())
    }

    /// The proxies' controls by server name.
    pub fn proxy_controls(&self) -> BTreeMap<String, ProxyControl> {
        self.endpoints
            .iter()
            .map(|(n, p)| (n.clone(), p.control()))
            .collect()
    }

    /// Free-text description for the history header.
    pub fn describe(&self) -> String {
        let list: Vec<String> = self
            .servers
            .iter()
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
        text.push_str(&format!("; resource {}", self.resource.addr()));
        text
    }

    /// Whether any Sentinel is in TILT mode now or has been during the run (its log
    /// says `+tilt`): the machine stalled and Sentinel's decisions mean nothing.
    pub fn sentinel_tilt(&self) -> Option<String> {
        for (i, s) in self.sentinels.iter().enumerate() {
            if s.info("sentinel").contains("sentinel_tilt:1") || s.log().contains("+tilt") {
                return Some(format!("sentinel {} entered TILT mode", i + 1));
            }
        }
        None
    }

    /// The Redis version, for the header.
    pub fn redis_version(&self) -> String {
        self.resource
            .info("server")
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string()
    }
}

/// The master address the Sentinels name (asks the first that answers).
pub fn sentinel_master(sentinels: &[RedisServer]) -> Option<String> {
    sentinels.iter().find_map(|s| {
        let out = s.cli(&["SENTINEL", "get-master-addr-by-name", MASTER_NAME]);
        let mut lines = out.lines();
        match (lines.next(), lines.next()) {
            (Some(h), Some(p)) if !h.is_empty() => Some(format!("{h}:{p}")),
            _ => None,
        }
    })
}
