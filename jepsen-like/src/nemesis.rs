//! The nemesis: carries out a [`Schedule`] against the run's servers, proxies and
//! clients, and records every action in the history as it happens.
//!
//! It runs on a thread of its own that lives until the workload is over: a server it
//! restarts dies with the thread that started it (`PR_SET_PDEATHSIG`), so the thread
//! must outlive the run.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use locklab_implementations::testing::RedisServer;
use serde_json::json;

use crate::log::Log;
use crate::proxy::ProxyControl;
use crate::schedule::{Action, Schedule};

/// Client pauses asked for by the nemesis and not yet taken by a client.
#[derive(Default)]
pub struct ClientPauses {
    pending: Mutex<VecDeque<u64>>,
}

impl ClientPauses {
    /// Asks the next client that reaches its pause point to stall for `ms`.
    pub fn request(&self, ms: u64) {
        self.lock().push_back(ms);
    }

    /// Takes a pending pause, if any.
    pub fn take(&self) -> Option<u64> {
        self.lock().pop_front()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<u64>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the nemesis acts on.
pub struct Targets<'a> {
    /// Lock servers by name.
    pub servers: &'a mut BTreeMap<String, RedisServer>,
    /// Proxies in front of them, by server name.
    pub proxies: BTreeMap<String, ProxyControl>,
    /// Client pauses.
    pub pauses: &'a ClientPauses,
}

/// Runs `schedule` (times from `start`), then waits for `done` so that restarted
/// servers live as long as the workload.
pub fn run(
    schedule: &Schedule,
    targets: Targets<'_>,
    log: &Log,
    start: Instant,
    done: &Receiver<()>,
) {
    let mut targets = targets;
    for step in &schedule.steps {
        let at = start + Duration::from_millis(step.at_ms);
        let now = Instant::now();
        if at > now {
            // A `done` here means the workload ended early (an error): stop faulting.
            if done.recv_timeout(at - now).is_ok() {
                return;
            }
        }
        let outcome = apply(&step.action, &mut targets);
        let value = serde_json::to_value(&step.action).unwrap_or_else(|_| json!({}));
        log.nemesis(value, outcome.err());
    }
    let _ = done.recv();
}

fn server<'s>(targets: &'s mut Targets<'_>, name: &str) -> Result<&'s mut RedisServer, String> {
    targets
        .servers
        .get_mut(name)
        .ok_or_else(|| format!("no server named {name}"))
}

fn apply(action: &Action, targets: &mut Targets<'_>) -> Result<(), String> {
    match action {
        Action::Kill { target } => server(targets, target)?.kill(),
        Action::Stop { target } => server(targets, target)?.stop(),
        Action::Pause { target } => server(targets, target)?.pause(),
        Action::Resume { target } => server(targets, target)?.resume(),
        Action::Restart { target, keep_data } => {
            let s = server(targets, target)?;
            let r = if *keep_data {
                s.restart_keeping_data()
            } else {
                s.restart()
            };
            r.map_err(|e| e.to_string())?;
        }
        Action::CutReplication { target } => {
            let s = server(targets, target)?;
            let acl = s.cli(&["ACL", "SETUSER", "default", "-psync", "-sync"]);
            if acl != "OK" {
                return Err(format!("ACL SETUSER answered {acl:?}"));
            }
            // Only the links of replicas that replicate as `default`: one set apart
            // with its own user keeps replicating.
            s.cli(&["CLIENT", "KILL", "TYPE", "replica", "USER", "default"]);
        }
        Action::HealReplication { target } => {
            let s = server(targets, target)?;
            let acl = s.cli(&["ACL", "SETUSER", "default", "+psync", "+sync"]);
            if acl != "OK" {
                return Err(format!("ACL SETUSER answered {acl:?}"));
            }
        }
        Action::Partition { target } => targets
            .proxies
            .get(target)
            .ok_or_else(|| format!("no proxy in front of {target}"))?
            .cut(),
        Action::HealPartition { target } => targets
            .proxies
            .get(target)
            .ok_or_else(|| format!("no proxy in front of {target}"))?
            .heal(),
        Action::Clock { target, offset } => server(targets, target)?
            .set_clock(offset)
            .map_err(|e| e.to_string())?,
        Action::ClientPause { ms } => targets.pauses.request(*ms),
    }
    Ok(())
}

/// Follows Sentinel's view of the master: when the Sentinels name a new master, the
/// proxy sends the clients there (as a Sentinel-aware client would) and the history
/// records the failover. Polls until `done`; returns whether a failover was seen.
pub fn follow_master(
    sentinels: &[RedisServer],
    proxy: &ProxyControl,
    names: &BTreeMap<String, String>,
    log: &Log,
    done: &Receiver<()>,
) -> bool {
    let mut current: Option<String> = None;
    let mut failed_over = false;
    loop {
        if let Some(addr) = crate::topology::sentinel_master(sentinels) {
            if current.as_deref() != Some(addr.as_str()) {
                if current.is_some() {
                    failed_over = true;
                    proxy.retarget(&addr);
                    let name = names.get(&addr).cloned().unwrap_or_else(|| addr.clone());
                    log.nemesis(
                        json!({"fault": "failover", "target": name, "addr": addr}),
                        Some(format!("Sentinel promoted {name}; clients now reach it")),
                    );
                }
                current = Some(addr);
            }
        }
        if done.recv_timeout(Duration::from_millis(100)).is_ok() {
            return failed_over;
        }
    }
}
