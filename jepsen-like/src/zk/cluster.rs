//! The ZooKeeper family's servers for one run: an ensemble of three, each on a host of
//! its own (or all on 127.0.0.1 with leased ports: [`crate::placement`]), with own data
//! dirs and myids, started as child processes. The
//! leader is the ensemble's primary, asked of the servers when a fault needs it. Each
//! client reaches every server through proxies of its own in front of the harness's, so
//! a pause or a partition cuts exactly that client off: its session's pings stop
//! arriving and the ensemble expires the session on its own clock, as it would for a
//! stopped process; the same proxies lose a create's reply when the nemesis asks. Every
//! request of a client's session is a `command` event of the run's history.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use locklab_implementations::recorder::event_recorder;
use locklab_implementations::zk::{make_lock_dir, ZkSession, ZkWire};
use locklab_models::zk::spec::{ZkCommand, ZkReply};
use locklab_servers::net::Lab;
use locklab_servers::zk::Mode;
use locklab_servers::{Server, ZkEnsemble};

use super::actions::ZkAction;
use super::client::ZkClient;
use super::locks;
use super::tap::CreateTrap;
use crate::family::CommandLog;
use crate::placement::{self, Net};
use crate::proxy::ClientProxies;
use crate::servers::Servers;
use crate::RunError;

/// The shape of the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Three servers, `zk1` … `zk3`.
    Three,
    /// Three servers, each on a host of its own (a [`Lab`]), so that a partition can
    /// cut one off from the others; clients ask for sessions of `session_ms`.
    ThreeOnHosts {
        /// The session timeout clients ask for (ms).
        session_ms: u64,
    },
}

/// A running ensemble. Dropping it kills every server, then removes their hosts.
pub struct ZkRunCluster {
    ensemble: ZkEnsemble,
    /// The servers' hosts, for [`Shape::ThreeOnHosts`]; dropped after the servers.
    lab: Option<Lab>,
    /// The session timeout clients ask for.
    session: Duration,
    /// The lost-create-reply trap every client's proxies share.
    trap: Arc<AtomicBool>,
}

impl ZkRunCluster {
    /// The client's own proxies in front of the harness's (with the lost-reply trap),
    /// and its session through them, detached: a client that dies never closes it, so
    /// it ends by expiring, as a crashed process's does.
    pub(super) async fn connect_client(
        &self,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<ZkClient, RunError> {
        let CommandLog { process, log } = commands;
        let trap = Arc::new(CreateTrap {
            armed: self.trap.clone(),
            client: process.to_string(),
            log: log.clone(),
            proxies: Arc::default(),
        });
        let proxies = ClientProxies::start_tapped(addrs, trap.clone())
            .await
            .map_err(|e| RunError::Environment(format!("a client's proxies to {addrs:?}: {e}")))?;
        let _ = trap.proxies.set(proxies.controls());
        let list = proxies.addrs();
        let base = log.base();
        let requests = event_recorder::<ZkWire>(process, base, move |e| log.record_stamped(e));
        let session = ZkSession::connect(&list.join(","), self.session, requests, true)
            .await
            .map_err(|e| RunError::Environment(format!("connecting to {list:?}: {e}")))?;
        let setup = |e| RunError::Environment(format!("setting up {list:?}: {e}"));
        make_lock_dir(&session).await.map_err(setup)?;
        // The counter node the `multi`-checked work writes: made empty (never written)
        // before any client works, since a `multi`'s `setData` cannot create it.
        let counter = ZkCommand::Create {
            session: session.id(),
            path: locks::COUNTER.into(),
            data: String::new(),
            ephemeral: false,
            sequential: false,
        };
        match session.exec(counter).await.map_err(setup)? {
            ZkReply::Created { .. } | ZkReply::Error(_) => {}
            other => {
                return Err(RunError::Environment(format!(
                    "creating {}: {other:?}",
                    locks::COUNTER
                )))
            }
        }
        Ok(ZkClient { proxies, session })
    }
}

impl Servers for ZkRunCluster {
    type Shape = Shape;
    type Action = ZkAction;

    fn start(shape: &Shape, fake_clock: bool, net: Net) -> Result<Self, RunError> {
        let needed_for = match shape {
            Shape::Three => None,
            Shape::ThreeOnHosts { .. } => {
                Some("cutting a leader off from its quorum needs each server on a host of its own")
            }
        };
        let lab = placement::lab(&["zk1", "zk2", "zk3"], net, needed_for)?;
        let ensemble = ZkEnsemble::start_with(3, lab.as_ref(), fake_clock)
            .map_err(|e| RunError::Environment(e.to_string()))?;
        Ok(ZkRunCluster {
            ensemble,
            lab,
            session: match shape {
                Shape::Three => Duration::from_secs(2),
                Shape::ThreeOnHosts { session_ms } => Duration::from_millis(*session_ms),
            },
            trap: Arc::default(),
        })
    }

    fn node_names(&self) -> Vec<String> {
        (1..=self.ensemble.servers().len())
            .map(|i| format!("zk{i}"))
            .collect()
    }

    fn node(&mut self, i: usize) -> Option<&mut dyn Server> {
        (i < self.ensemble.servers().len()).then(|| self.ensemble.server_mut(i) as &mut dyn Server)
    }

    /// The leader (or a standalone server): what every write goes through.
    fn primary(&self) -> Option<usize> {
        self.ensemble
            .servers()
            .iter()
            .position(|s| matches!(s.mode(), Some(Mode::Leader | Mode::Standalone)))
    }

    /// locklab's own client reaches the ensemble as one endpoint set and records every
    /// request as endpoint 0's, whichever member served it: endpoint 0 is named for
    /// all of them, so a drawing never puts a request on a member it may not have
    /// reached. (An external client's wiretap records each member's own index.)
    fn endpoint_names(&self) -> Vec<String> {
        let names = self.node_names();
        let mut out = names.clone();
        if let Some(first) = out.first_mut() {
            *first = format!("ensemble ({})", names.join(", "));
        }
        out
    }

    fn client_nodes(&self) -> Vec<usize> {
        (0..self.ensemble.servers().len()).collect()
    }

    /// No ZooKeeper plan waits for a server to hold the lock, and asking one needs a
    /// client session of its own: never.
    fn holds_key(&self, _i: usize, _key: &str) -> bool {
        false
    }

    fn set_clock(&mut self, i: usize, offset: &str) -> Result<(), String> {
        self.ensemble
            .servers()
            .get(i)
            .ok_or_else(|| format!("no server zk{}", i + 1))?
            .set_clock(offset)
            .map_err(|e| format!("zk{}: {e}", i + 1))
    }

    fn apply(&mut self, action: &ZkAction) -> Result<(), String> {
        match action {
            ZkAction::IsolateLeader => {
                let lab = self
                    .lab
                    .as_ref()
                    .ok_or("cutting the leader off needs the servers on hosts of their own")?;
                let leader = self.primary().ok_or("no server says it leads")?;
                lab.isolate(&format!("zk{}", leader + 1))
                    .map_err(|e| e.to_string())
            }
            ZkAction::HealIsolation => self
                .lab
                .as_ref()
                .ok_or("no hosts to heal")?
                .heal()
                .map_err(|e| e.to_string()),
            ZkAction::LoseCreateReply => {
                self.trap.store(true, Ordering::SeqCst);
                Ok(())
            }
            ZkAction::KillLeader => {
                let leader = self.primary().ok_or("no server says it leads")?;
                self.ensemble.server_mut(leader).kill();
                Ok(())
            }
            ZkAction::RestartKilled => {
                let n = self.ensemble.servers().len();
                let down: Vec<usize> = (0..n)
                    .filter(|&i| !self.ensemble.server_mut(i).is_running())
                    .collect();
                if down.is_empty() {
                    return Err("no server is down".into());
                }
                for i in down {
                    self.ensemble
                        .server_mut(i)
                        .restart_keeping_data()
                        .map_err(|e| format!("zk{}: {e}", i + 1))?;
                }
                Ok(())
            }
        }
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self
            .ensemble
            .servers()
            .iter()
            .enumerate()
            .map(|(i, s)| format!("zk{} {}", i + 1, s.addr()))
            .collect();
        let hosts = if self.lab.is_some() {
            " (each on a host of its own)"
        } else {
            ""
        };
        format!("ZooKeeper ensemble: {}{hosts}", list.join(", "))
    }

    fn tools(&self) -> Vec<(String, String)> {
        let version = self
            .ensemble
            .servers()
            .first()
            .and_then(|s| locklab_servers::zk::four_letter_at(s.process().ip(), s.port(), "srvr"))
            .and_then(|a| {
                a.lines()
                    .find_map(|l| l.strip_prefix("Zookeeper version:"))
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        vec![("zookeeper".into(), version)]
    }

    fn keep_logs(&self, dir: &Path) {
        for (i, s) in self.ensemble.servers().iter().enumerate() {
            let _ = std::fs::write(dir.join(format!("zk{}.log", i + 1)), s.log());
        }
    }
}
