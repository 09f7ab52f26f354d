//! The nemesis: carries out a [`Schedule`] against any family's [`Servers`], the
//! proxies in front of it and the clients, waiting for the events steps name, and
//! records every action (or why it was skipped) in the history as it happens.
//!
//! It runs on a thread of its own that lives until the workload is over: a server it
//! restarts dies with the thread that started it (`PR_SET_PDEATHSIG`), so the thread
//! must outlive the run.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::deadline::Deadline;
use crate::log::Log;
use crate::proxy::{Cut, ProxyControl};
use locklab_models::kernel::split::on_first_side;
use locklab_models::registry::Fault;
use locklab_traces::format::Injected;

use crate::schedule::{Action, Event, FamilyAction, Schedule, Target, When};
use crate::servers::Servers;

/// What a client is asked to suffer at the middle of its critical section: one of the
/// model's faults, as long as `ms` (0: a fault without a length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientFault {
    /// The model's fault.
    pub fault: Fault,
    /// How long it lasts.
    pub ms: u64,
    /// A pause whose holder steps on once another client has entered (see
    /// [`crate::schedule::Action::Client`]).
    pub overstay: bool,
}

impl std::fmt::Display for ClientFault {
    /// As the history names the fault (`client-pause 1500 ms`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client-{}", self.fault)?;
        if self.ms > 0 {
            write!(f, " {} ms", self.ms)?;
        }
        Ok(())
    }
}

/// Client faults asked for by the nemesis and not yet taken by a client.
#[derive(Default)]
pub struct ClientFaults {
    pending: Mutex<VecDeque<(Option<u32>, ClientFault)>>,
}

impl ClientFaults {
    /// Asks client `who` (`None`: the next client) to suffer `fault` when it next
    /// reaches the middle of its critical section.
    pub fn request(&self, who: Option<u32>, fault: ClientFault) {
        self.lock().push_back((who, fault));
    }

    /// The faults asked for that no client took (none reached the middle of its
    /// critical section after the request).
    pub fn untaken(&self) -> Vec<ClientFault> {
        self.lock().iter().map(|(_, f)| *f).collect()
    }

    /// Takes the first pending fault meant for client `c`, if any.
    pub fn take(&self, c: u32) -> Option<ClientFault> {
        let mut pending = self.lock();
        let i = pending
            .iter()
            .position(|(who, _)| who.is_none_or(|w| w == c))?;
        pending.remove(i).map(|(_, f)| f)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Option<u32>, ClientFault)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the nemesis acts on.
pub struct Targets<'a, S> {
    /// The servers.
    pub cluster: &'a Mutex<S>,
    /// Proxies in front of the client nodes, by node index.
    pub proxies: &'a [(usize, ProxyControl)],
    /// Client faults.
    pub clients: &'a ClientFaults,
    /// Each client's own proxies, by client index (empty where the family's clients
    /// share the run's): what a split cuts.
    pub own: &'a [Vec<ProxyControl>],
    /// The lock's key, for [`Event::KeyOn`].
    pub key: &'a str,
    /// When the clients stop: each step that waited for an event leaves them at least
    /// `grace` after it, however late the event came.
    pub end: &'a Deadline,
    /// How long the clients go on after a fault at the least.
    pub grace: Duration,
}

/// The clients' start, which waits for the nemesis: the steps planned before it
/// are in force when the clients start, however long the servers took to apply them
/// (a replication cut planned at 0 that a loaded machine applied after the first SET
/// had reached the replica once left a failover run with nothing to show).
pub struct ClientsStart {
    /// When the clients start at the earliest (ms after the nemesis).
    pub at_ms: u64,
    /// Dropped once the steps planned up to then are done, or the nemesis is over.
    pub tell: tokio::sync::oneshot::Sender<()>,
}

impl ClientsStart {
    /// How many of `steps`, from the first, the clients wait for: those planned at or
    /// before their start, never one that waits for an event their own traffic brings
    /// about (a grant, a key), which would wait for ever.
    pub fn waits_for<A>(&self, steps: &[crate::schedule::Step<A>]) -> usize {
        steps
            .iter()
            .take_while(|s| matches!(s.when, When::At(ms) if ms <= self.at_ms))
            .count()
    }
}

impl<S> Targets<'_, S> {
    fn cluster(&self) -> std::sync::MutexGuard<'_, S> {
        self.cluster.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the nemesis did, for the runner's after-run checks.
#[derive(Clone, Debug, Default)]
pub struct Done {
    /// A step killed (or stopped) the primary.
    pub primary_killed: bool,
    /// The steps that never fired, each with why (the event it waited for never came,
    /// the workload was over first, the action failed).
    pub unfired: Vec<String>,
}

impl Done {
    /// Notes that `steps` never fired because the workload was over first.
    fn over<A: FamilyAction>(mut self, steps: &[crate::schedule::Step<A>]) -> Done {
        for s in steps {
            self.unfired.push(format!(
                "{} {}: the workload was over before its time",
                s.action.name(),
                s.action.target()
            ));
        }
        self
    }
}

/// Why waiting ended.
enum Waited {
    Came,
    TimedOut,
    /// The workload is over (or ended early on an error): stop faulting.
    Over,
}

fn sleep_or_over(done: &Receiver<()>, d: Duration) -> bool {
    !matches!(done.recv_timeout(d), Err(RecvTimeoutError::Timeout))
}

fn happened<S: Servers>(event: Event, targets: &Targets<'_, S>, log: &Log) -> bool {
    match event {
        Event::FirstGrant => log.grants() > 0,
        Event::Entered(Target::Client(c)) => log.entered(Some(c)),
        Event::Entered(_) => log.entered(None),
        Event::FailedOver => targets.cluster().failed_over(),
        Event::KeyOn(t) => {
            let cluster = targets.cluster();
            resolve(&*cluster, t).is_ok_and(|i| cluster.holds_key(i, targets.key))
        }
    }
}

fn wait_for<S: Servers>(
    event: Event,
    timeout: Duration,
    targets: &Targets<'_, S>,
    log: &Log,
    done: &Receiver<()>,
) -> Waited {
    let start = Instant::now();
    // A server probe costs a process spawn; a log milestone costs an atomic load.
    let poll = match event {
        Event::KeyOn(_) => Duration::from_millis(20),
        _ => Duration::from_millis(2),
    };
    loop {
        if happened(event, targets, log) {
            return Waited::Came;
        }
        if start.elapsed() >= timeout {
            return Waited::TimedOut;
        }
        if sleep_or_over(done, poll) {
            return Waited::Over;
        }
    }
}

/// Runs `schedule` (timed steps from `start`), then waits for `done` so that restarted
/// servers live as long as the workload.
pub fn run<S: Servers>(
    schedule: &Schedule<S::Action>,
    targets: Targets<'_, S>,
    log: &Log,
    start: Instant,
    done: &Receiver<()>,
    clients: ClientsStart,
) -> Done {
    let mut outcome = Done::default();
    // Dropped (the clients told to start) once the steps they wait for are done, or
    // when the nemesis is over.
    let before = clients.waits_for(&schedule.steps);
    let mut tell = Some(clients.tell);
    for (n, step) in schedule.steps.iter().enumerate() {
        let rest = &schedule.steps[n..];
        if n == before {
            tell.take();
        }
        match step.when {
            When::At(ms) => {
                let at = start + Duration::from_millis(ms);
                let now = Instant::now();
                if at > now && sleep_or_over(done, at - now) {
                    return outcome.over(rest);
                }
            }
            When::After {
                event,
                delay_ms,
                timeout_ms,
            } => match wait_for(
                event,
                Duration::from_millis(timeout_ms),
                &targets,
                log,
                done,
            ) {
                Waited::Over => return outcome.over(rest),
                Waited::TimedOut => {
                    let target = step.action.target().to_string();
                    outcome.unfired.push(format!(
                        "{} {target}: waited {timeout_ms} ms for {event}, which never came",
                        step.action.name()
                    ));
                    log.nemesis(
                        Injected::skipped(&step.action.name(), &target),
                        Some(format!(
                            "skipped: waited {timeout_ms} ms for {event}, which never came"
                        )),
                    );
                    continue;
                }
                Waited::Came => {
                    if sleep_or_over(done, Duration::from_millis(delay_ms)) {
                        return outcome.over(rest);
                    }
                }
            },
        }
        let mut cluster = targets.cluster();
        let name = match &step.action {
            Action::Family(a) => a.target_name().map(str::to_string),
            a => a.sides(&cluster.node_names(), targets.own.len()),
        }
        .unwrap_or_else(|| name_of(&*cluster, step.action.target()));
        let killed_primary = matches!(
            (&step.action, resolve(&*cluster, step.action.target()), cluster.primary()),
            (Action::Kill(_) | Action::Stop(_), Ok(i), Some(p)) if i == p
        );
        let result = apply(&step.action, &mut *cluster, &targets);
        drop(cluster);
        outcome.primary_killed |= killed_primary && result.is_ok();
        if let Err(e) = &result {
            outcome
                .unfired
                .push(format!("{} {name}: {e}", step.action.name()));
        }
        log.nemesis(step.action.injected(&name), result.err());
        if matches!(step.when, When::After { .. }) {
            targets.end.at_least(Instant::now() + targets.grace);
        }
    }
    drop(tell);
    let _ = done.recv();
    outcome
}

fn resolve<S: Servers>(cluster: &S, target: Target) -> Result<usize, String> {
    match target {
        Target::Node(i) if i < cluster.node_names().len() => Ok(i),
        Target::Node(i) => Err(format!("no node {i}")),
        Target::Primary => cluster
            .primary()
            .ok_or_else(|| "this cluster has no primary".to_string()),
        Target::Client(_) | Target::AnyClient => Err(format!("{target} is not a server")),
    }
}

/// The target as the history names it: the node's name in the run.
fn name_of<S: Servers>(cluster: &S, target: Target) -> String {
    match resolve(cluster, target) {
        Ok(i) => cluster
            .node_names()
            .get(i)
            .cloned()
            .unwrap_or_else(|| target.to_string()),
        Err(_) => target.to_string(),
    }
}

fn client(target: Target) -> Result<Option<u32>, String> {
    match target {
        Target::Client(c) => Ok(Some(c)),
        Target::AnyClient => Ok(None),
        other => Err(format!("{other} is not a client")),
    }
}

fn apply<S: Servers>(
    action: &Action<S::Action>,
    cluster: &mut S,
    targets: &Targets<'_, S>,
) -> Result<(), String> {
    let proxy = |i: usize| {
        targets
            .proxies
            .iter()
            .find(|(n, _)| *n == i)
            .map(|(_, p)| p.clone())
            .ok_or_else(|| format!("no proxy in front of node {i}"))
    };
    match action {
        Action::Client {
            fault,
            target,
            ms,
            overstay,
        } => {
            let fault = ClientFault {
                fault: *fault,
                ms: *ms,
                overstay: *overstay,
            };
            targets.clients.request(client(*target)?, fault);
            return Ok(());
        }
        Action::Family(a) => return cluster.apply(a),
        Action::Split { nodes, clients } => return split(targets.own, *nodes, *clients),
        Action::HealSplit => {
            for p in targets.own.iter().flatten() {
                p.heal_because(Cut::Split);
            }
            return Ok(());
        }
        _ => {}
    }
    let i = resolve(cluster, action.target())?;
    match action {
        Action::Kill(_) => server(cluster, i)?.kill(),
        Action::Stop(_) => server(cluster, i)?.stop(),
        Action::Pause(_) => server(cluster, i)?.pause(),
        Action::Resume(_) => server(cluster, i)?.resume(),
        Action::Restart { keep_data, .. } => {
            let s = server(cluster, i)?;
            let r = if *keep_data {
                s.restart_keeping_data()
            } else {
                s.restart()
            };
            r.map_err(|e| e.to_string())?;
        }
        Action::Partition(_) => proxy(i)?.cut(),
        Action::HealPartition(_) => proxy(i)?.heal(),
        Action::Clock { offset, .. } => cluster.set_clock(i, offset)?,
        Action::Client { .. } | Action::Family(_) | Action::Split { .. } | Action::HealSplit => {}
    }
    Ok(())
}

/// Cuts each client's own proxy to every node across the split (the nodes of mask
/// `nodes` and the clients of mask `clients` on one side), and heals the rest.
fn split(own: &[Vec<ProxyControl>], nodes: u32, clients: u32) -> Result<(), String> {
    if own.is_empty() || own.iter().any(Vec::is_empty) {
        return Err(
            "a split needs every client's own proxies; this family's clients share the run's"
                .into(),
        );
    }
    for (c, proxies) in own.iter().enumerate() {
        let client_first = on_first_side(clients.into(), c);
        for (i, p) in proxies.iter().enumerate() {
            match on_first_side(nodes.into(), i) == client_first {
                true => p.heal_because(Cut::Split),
                false => p.cut_because(Cut::Split),
            }
        }
    }
    Ok(())
}

fn server<S: Servers>(
    cluster: &mut S,
    i: usize,
) -> Result<&mut dyn locklab_servers::Server, String> {
    cluster.node(i).ok_or_else(|| format!("no node {i}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Action, Event, Step, Target};

    fn step(when: When) -> Step<()> {
        Step {
            when,
            action: Action::Kill(Target::Primary),
        }
    }

    fn after_grant() -> When {
        When::After {
            event: Event::FirstGrant,
            delay_ms: 0,
            timeout_ms: 1_000,
        }
    }

    /// The clients wait for the steps planned before their start, and never for one
    /// that waits on their own traffic (the run would wait for ever) or comes later.
    #[test]
    fn the_clients_wait_for_the_steps_before_their_start_and_no_other() {
        let (tell, _) = tokio::sync::oneshot::channel();
        let start = ClientsStart { at_ms: 300, tell };
        let cut_then_kill = [step(When::At(0)), step(after_grant()), step(When::At(0))];
        assert_eq!(start.waits_for(&cut_then_kill), 1);
        let at = [step(When::At(0)), step(When::At(300)), step(When::At(301))];
        assert_eq!(start.waits_for(&at), 2);
        assert_eq!(start.waits_for(&[step(after_grant())]), 0);
        assert_eq!(start.waits_for::<()>(&[]), 0);
    }
}
