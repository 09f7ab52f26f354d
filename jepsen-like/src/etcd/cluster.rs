//! The etcd family's servers for one run: a cluster of three members, each on a host
//! of its own (or all on 127.0.0.1 with leased ports: [`crate::placement`]), with own
//! data dirs, started as child processes. The leader
//! is the cluster's primary, read from the members at the moment a fault asks, so
//! `kill primary` kills whichever member leads then. Each client reaches every member
//! through proxies of its own in front of the harness's, so a partition or a lost
//! reply hits exactly that client, and records every request it sends as a `command`
//! event; so do the nemesis's own requests (a lease revoke).

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use locklab_implementations::etcd::history::event_log;
use locklab_implementations::etcd::EtcdSession;
use locklab_models::etcd::spec::{EtcdCommand, EtcdReply, LOCK_PREFIX};
use locklab_servers::net::Lab;
use locklab_servers::{EtcdCluster, Server};
use locklab_traces::Process;

use super::actions::EtcdAction;
use super::client::EtcdClient;
use crate::family::CommandLog;
use crate::log::Log;
use crate::placement::{self, Net};
use crate::proxy::ClientProxies;
use crate::servers::Servers;
use crate::RunError;

/// How long a leader change may take before the churn gives up.
const ELECTION_WAIT: Duration = Duration::from_secs(5);

/// The shape of the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Three members, `e1` … `e3`.
    Three,
    /// Three members, each on a host of its own (a [`Lab`]), so that a partition can
    /// cut one off from the others.
    ThreeOnHosts,
}

/// A running etcd cluster. Dropping it kills every member, then removes their hosts.
pub struct EtcdRunCluster {
    cluster: EtcdCluster,
    /// The run's history, once a client connected: where the nemesis's own requests
    /// go.
    log: OnceLock<Arc<Log>>,
    /// The members' hosts, for [`Shape::ThreeOnHosts`]; dropped after the members.
    lab: Option<Lab>,
}

impl EtcdRunCluster {
    /// The member every running member names as leader now, if they agree on one.
    fn leader_now(&self) -> Option<usize> {
        let status: Vec<_> = self.cluster.members().iter().map(|m| m.status()).collect();
        let leader = status.iter().flatten().map(|(_, l)| l).next()?;
        let agreed = status.iter().flatten().all(|(_, l)| l == leader);
        if !agreed || leader == "0" {
            return None;
        }
        status
            .iter()
            .position(|s| s.as_ref().is_some_and(|(me, _)| me == leader))
    }
}

impl EtcdRunCluster {
    /// The client's own proxies in front of the harness's, and its session through
    /// them.
    pub(super) async fn connect_client(
        &self,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<EtcdClient, RunError> {
        let CommandLog { process, log } = commands;
        let _ = self.log.set(log.clone());
        let proxies = ClientProxies::start(addrs)
            .await
            .map_err(|e| RunError::Environment(format!("a client's proxies to {addrs:?}: {e}")))?;
        let base = log.base();
        let requests = event_log(process, base, move |e| log.record_stamped(e));
        let urls: Vec<String> = proxies
            .addrs()
            .iter()
            .map(|a| format!("http://{a}"))
            .collect();
        let session = EtcdSession::connect(&urls, requests)
            .await
            .map_err(|e| RunError::Environment(format!("connecting to {urls:?}: {e}")))?;
        Ok(EtcdClient {
            session: Arc::new(session),
            proxies,
        })
    }

    /// `kill -9` of the leader, a new leader elected by the others, the old one back
    /// with its data.
    fn churn_leader(&mut self) -> Result<(), String> {
        let old = self
            .cluster
            .kill_leader(ELECTION_WAIT)
            .ok_or("the members agree on no leader")?;
        let elected = self.cluster.leader(ELECTION_WAIT);
        let restarted = self.cluster.member_mut(old).restart_keeping_data();
        elected.ok_or_else(|| format!("no new leader within {ELECTION_WAIT:?} of the kill"))?;
        restarted.map_err(|e| e.to_string())
    }

    /// Cuts the leader's host off from the other members' (both ways), the clients'
    /// side untouched.
    fn isolate_leader(&mut self) -> Result<(), String> {
        let lab = self
            .lab
            .as_ref()
            .ok_or("cutting the leader off needs the members on hosts of their own")?;
        let leader = self
            .leader_now()
            .ok_or("the members agree on no leader to cut off")?;
        lab.isolate(self.cluster.members()[leader].name())
            .map_err(|e| e.to_string())
    }

    /// Finds the key queued last under the lock's prefix and revokes its lease, with
    /// requests of the nemesis's own that the history records.
    fn revoke_last_waiter(&mut self) -> Result<(), String> {
        let log = self
            .log
            .get()
            .cloned()
            .ok_or("no client has connected: no history to record the revoke in")?;
        let urls = self.cluster.endpoints();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("a runtime for the revoke: {e}"))?;
        runtime.block_on(async move {
            let base = log.base();
            let requests = event_log(Process::NEMESIS, base, move |e| log.record_stamped(e));
            let session = EtcdSession::connect(&urls, requests)
                .await
                .map_err(|e| format!("connecting to {urls:?}: {e}"))?;
            let last = EtcdCommand::LastCreateBefore {
                prefix: LOCK_PREFIX.into(),
                max_create_rev: i64::MAX as u64,
            };
            let first = EtcdCommand::FirstCreate {
                prefix: LOCK_PREFIX.into(),
            };
            let key = |r: Result<EtcdReply, _>| match r {
                Ok(EtcdReply::Kvs(kvs)) => kvs.into_iter().next(),
                _ => None,
            };
            let waiter = key(session.exec(last).await).ok_or("nobody holds the lock")?;
            let holder = key(session.exec(first).await).ok_or("nobody holds the lock")?;
            if waiter.0 == holder.0 {
                return Err(format!("nobody waits behind {}", holder.0));
            }
            let lease = waiter.1.lease.ok_or(format!("{} has no lease", waiter.0))?;
            match session.exec(EtcdCommand::Revoke { lease }).await {
                Ok(EtcdReply::Revoked) => Ok(()),
                other => Err(format!("lease revoke {lease:x}: {other:?}")),
            }
        })
    }
}

impl Servers for EtcdRunCluster {
    type Shape = Shape;
    type Action = EtcdAction;

    fn start(shape: &Shape, _fake_clock: bool, net: Net) -> Result<Self, RunError> {
        let needed_for = match shape {
            Shape::Three => None,
            Shape::ThreeOnHosts => {
                Some("cutting a leader off from its quorum needs each member on a host of its own")
            }
        };
        let lab = placement::lab(&["e1", "e2", "e3"], net, needed_for)?;
        let cluster = EtcdCluster::start_on(3, lab.as_ref())
            .map_err(|e| RunError::Environment(e.to_string()))?;
        Ok(EtcdRunCluster {
            cluster,
            log: OnceLock::new(),
            lab,
        })
    }

    fn node_names(&self) -> Vec<String> {
        self.cluster
            .members()
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }

    fn node(&mut self, i: usize) -> Option<&mut dyn Server> {
        (i < self.cluster.members().len()).then(|| self.cluster.member_mut(i) as &mut dyn Server)
    }

    /// The leader: what etcd writes through.
    fn primary(&self) -> Option<usize> {
        self.leader_now()
    }

    /// locklab's own client reaches the cluster as one endpoint set and records every
    /// request as endpoint 0's, whichever member served it: endpoint 0 is named for
    /// all of them, so a drawing never puts a request on a member it may not have
    /// reached. (An external client's wiretap records each member's own index.)
    fn endpoint_names(&self) -> Vec<String> {
        let names = self.node_names();
        let mut out = names.clone();
        if let Some(first) = out.first_mut() {
            *first = format!("cluster ({})", names.join(", "));
        }
        out
    }

    fn client_nodes(&self) -> Vec<usize> {
        (0..self.cluster.members().len()).collect()
    }

    /// Whether member `i` has a key of the recipe's (`lock/…`): the run's lock is the
    /// prefix, not one key, so `key` is not asked for.
    fn holds_key(&self, i: usize, _key: &str) -> bool {
        let Some(m) = self.cluster.members().get(i) else {
            return false;
        };
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &m.url(), "--command-timeout=1s"])
            .args(["get", LOCK_PREFIX, "--prefix", "--keys-only", "--limit=1"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().is_empty())
    }

    fn set_clock(&mut self, _i: usize, _offset: &str) -> Result<(), String> {
        Err("etcd members do not run under libfaketime (Go reads the clock itself)".into())
    }

    fn apply(&mut self, action: &EtcdAction) -> Result<(), String> {
        match action {
            EtcdAction::ChurnLeader => self.churn_leader(),
            EtcdAction::RevokeLastWaiter => self.revoke_last_waiter(),
            EtcdAction::IsolateLeader => self.isolate_leader(),
            EtcdAction::HealIsolation => self
                .lab
                .as_ref()
                .ok_or("no hosts to heal")?
                .heal()
                .map_err(|e| e.to_string()),
        }
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self
            .cluster
            .members()
            .iter()
            .map(|m| format!("{} {}", m.name(), m.addr()))
            .collect();
        let hosts = if self.lab.is_some() {
            " (each on a host of its own)"
        } else {
            ""
        };
        format!("etcd cluster: {}{hosts}", list.join(", "))
    }

    fn tools(&self) -> Vec<(String, String)> {
        let version = Command::new(locklab_servers::etcd::BINARY)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default();
        let version = version
            .lines()
            .find_map(|l| l.strip_prefix("etcd Version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string();
        vec![("etcd".into(), version)]
    }

    fn keep_logs(&self, dir: &Path) {
        for m in self.cluster.members() {
            let _ = std::fs::write(dir.join(format!("{}.log", m.name())), m.log());
        }
    }
}
