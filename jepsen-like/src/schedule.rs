//! A nemesis schedule is data: fault and heal actions on typed targets, each at a time
//! after the workload started or after an event of the run ("after the first grant"),
//! written into the history header and drawn from the run's seed, so a run can be
//! repeated.

use std::borrow::Cow;
use std::fmt;

use locklab_models::kernel::split;
use locklab_models::registry::Fault;
use locklab_traces::format::{ClientStep, Injected, What};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{json, Value};

/// What a fault acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The lock server with this index (in the family's order: Redlock's `n0` … `n4`).
    Node(usize),
    /// The lock server clients write to now (Redis: the master Sentinel names).
    Primary,
    /// Client `c`.
    Client(u32),
    /// Whichever client gets there first.
    AnyClient,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Node(i) => write!(f, "node {i}"),
            Target::Primary => f.write_str("primary"),
            Target::Client(c) => write!(f, "c{c}"),
            Target::AnyClient => f.write_str("any client"),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a step of a plan is to the model: the catalog row's faults are the plan's
/// faults, so every step that faults must realise one of the model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Realises {
    /// This fault of the model's.
    Fault(Fault),
    /// These faults of the model's, at once: a partition that cuts a master off from
    /// its Sentinels is the model's split, and the promotion Sentinel then makes on its
    /// own is the model's failover.
    Faults(&'static [Fault]),
    /// The end of a fault (a resume, a healed partition): nothing of its own.
    Heal,
    /// No fault to the model: it steers the run into an interleaving the model's
    /// search explores anyway (Redlock nodes cut off from every client until the first
    /// grant, so that it gets a bare majority: to the model, messages to them not yet
    /// delivered).
    Steer,
    /// A fault the family's model has no word for (a ZooKeeper leader election, which
    /// the model takes to change nothing): only a variant of a row's plan may have one,
    /// never the row's own.
    Beyond,
}

/// A fault only one family can do (Redis: cutting replication with the ACL trick).
pub trait FamilyAction: Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Its name in the history (`cut-replication`).
    fn name(&self) -> &'static str;
    /// What it is to the model.
    fn realises(&self) -> Realises;
    /// What it acts on.
    fn target(&self) -> Target;
    /// What the history names as its target, when [`FamilyAction::target`] cannot say
    /// (ZooKeeper's "the servers the nemesis killed"); `None`: the target's node name.
    fn target_name(&self) -> Option<&'static str> {
        None
    }
}

/// One thing the nemesis does; `A` is the family's own faults.
#[derive(Clone, Debug, PartialEq)]
pub enum Action<A> {
    /// Graceful shutdown of a server (SIGTERM).
    Stop(Target),
    /// `kill -9` of a server.
    Kill(Target),
    /// SIGSTOP of a server.
    Pause(Target),
    /// SIGCONT of a paused server.
    Resume(Target),
    /// Start a killed (or running) server again on its port, keeping its data (as with
    /// persistence) or empty.
    Restart {
        /// The server.
        target: Target,
        /// Keep its data.
        keep_data: bool,
    },
    /// Cut every client from a server: the TCP proxy in front of it drops its
    /// connections and refuses new ones.
    Partition(Target),
    /// End a partition.
    HealPartition(Target),
    /// Split the network in two, as Jepsen's partitions do: the nodes of mask `nodes`
    /// and the clients of mask `clients` on one side, every other node and client on
    /// the other. Each client's own proxies to the nodes across are cut; nothing
    /// crosses until [`Action::HealSplit`].
    Split {
        /// Bit `i`: node `i` is on the first side.
        nodes: u32,
        /// Bit `c`: client `c` is on the first side.
        clients: u32,
    },
    /// End the split.
    HealSplit,
    /// Set a server's libfaketime clock (`"+31"`: jump 31 s ahead).
    Clock {
        /// The server.
        target: Target,
        /// The libfaketime offset.
        offset: String,
    },
    /// A fault of the model's, suffered by the client (or the next one) that reaches
    /// the middle of its critical section: the model's client fault realised on a real
    /// client ([`crate::workload`] says how: a pause stalls it, its lease running on; a
    /// crash kills it; a partition cuts its own proxies while it works on; a drop loses
    /// its release's reply).
    Client {
        /// Which of the model's faults.
        fault: Fault,
        /// Who.
        target: Target,
        /// How long it lasts (a pause, a partition); 0 for a fault without a length.
        ms: u64,
        /// A pause whose holder, once resumed, takes its next step only when another
        /// client has just entered its section (waiting a quarter of `ms` at most): a
        /// scripted replay of the model's story, where the stale holder steps on while
        /// someone else holds the lock. A random nemesis's paused holders step on at
        /// once, so that a shrunk plan says all there was to the pause that broke the
        /// lock.
        overstay: bool,
    },
    /// A fault of the family's own.
    Family(A),
}

impl<A: FamilyAction> Action<A> {
    /// A client fault `fault` on `target`, lasting `ms` (0: no length).
    pub fn client(fault: Fault, target: Target, ms: u64) -> Self {
        Action::Client {
            fault,
            target,
            ms,
            overstay: false,
        }
    }

    /// A pause of `target` for `ms` whose holder then steps on once another client has
    /// entered (see [`Action::Client`]'s `overstay`).
    pub fn pause_until_another(target: Target, ms: u64) -> Self {
        Action::Client {
            fault: Fault::Pause,
            target,
            ms,
            overstay: true,
        }
    }

    /// Its name in the history (`kill`, `cut-replication`, `client-pause`).
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Action::Client { fault, .. } => return Cow::Owned(format!("client-{fault}")),
            Action::Stop(_) => "stop",
            Action::Kill(_) => "kill",
            Action::Pause(_) => "pause",
            Action::Resume(_) => "resume",
            Action::Restart { .. } => "restart",
            Action::Partition(_) => "partition",
            Action::HealPartition(_) => "heal-partition",
            Action::Split { .. } => "split",
            Action::HealSplit => "heal-split",
            Action::Clock { .. } => "clock",
            Action::Family(a) => a.name(),
        })
    }

    /// What it acts on.
    pub fn target(&self) -> Target {
        match self {
            Action::Stop(t)
            | Action::Kill(t)
            | Action::Pause(t)
            | Action::Resume(t)
            | Action::Partition(t)
            | Action::HealPartition(t) => *t,
            Action::Restart { target, .. }
            | Action::Clock { target, .. }
            | Action::Client { target, .. } => *target,
            Action::Family(a) => a.target(),
            // Every client: the history names the sides ([`Action::sides`]).
            Action::Split { .. } | Action::HealSplit => Target::AnyClient,
        }
    }

    /// A split's sides as the history names them (`n0, n1 with c0 | n2 with c1, c2`),
    /// from the run's node names and its number of clients.
    pub fn sides(&self, nodes: &[String], clients: usize) -> Option<String> {
        let (node_mask, client_mask) = match self {
            Action::Split { nodes, clients } => (*nodes, *clients),
            Action::HealSplit => return Some("every side, healed".into()),
            _ => return None,
        };
        let clients: Vec<String> = (0..clients).map(|c| format!("c{c}")).collect();
        Some(split::sides(
            nodes,
            node_mask.into(),
            &clients,
            client_mask.into(),
        ))
    }

    /// The action as the history records it, with `target` named by `name` (a node's
    /// name in the run, or the planned target).
    pub fn injected(&self, target: &str) -> Injected {
        let server = |name: &str| Injected::new(What::Server(name.to_string()), target);
        match self {
            Action::Restart { keep_data, .. } => {
                server("restart").with("keep_data", json!(keep_data))
            }
            Action::Clock { offset, .. } => server("clock").with("offset", json!(offset)),
            Action::Client {
                fault,
                ms,
                overstay,
                ..
            } => {
                let step = ClientStep::Suffers(*fault);
                let i = Injected::client(step, target, (*ms > 0).then_some(*ms));
                match *ms > 0 && *overstay {
                    true => i.with("then", json!("steps on once another client has entered")),
                    false => i,
                }
            }
            Action::Stop(_)
            | Action::Kill(_)
            | Action::Pause(_)
            | Action::Resume(_)
            | Action::Partition(_)
            | Action::HealPartition(_)
            | Action::Split { .. }
            | Action::HealSplit
            | Action::Family(_) => server(&self.name()),
        }
    }

    /// The action as JSON, as [`Action::injected`] records it.
    pub fn to_json(&self, target: &str) -> Value {
        self.injected(target).to_json()
    }
}

/// Something that happens in a run, which a step can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Some client was granted the lock.
    FirstGrant,
    /// The client (or any client) entered its critical section.
    Entered(Target),
    /// The node (or the primary) holds the lock's record.
    KeyOn(Target),
    /// The servers' own failover put a new primary in place (Sentinel promoted a
    /// replica).
    FailedOver,
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::FirstGrant => f.write_str("the first grant"),
            Event::Entered(Target::AnyClient) => f.write_str("a client enters"),
            Event::Entered(t) => write!(f, "{t} enters"),
            Event::KeyOn(t) => write!(f, "the {t} has the lock's key"),
            Event::FailedOver => f.write_str("the failover"),
        }
    }
}

/// When a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Milliseconds after the workload started.
    At(u64),
    /// Milliseconds after an event was seen (if it had happened already: after the
    /// step before); skipped, with the reason recorded, if the event does not come
    /// within `timeout_ms` of the step before.
    After {
        /// What to wait for (the first grant, a client entering, a node holding the key);
        /// the delay counts from when it is seen.
        event: Event,
        /// Delay after it.
        delay_ms: u64,
        /// How long to wait for it.
        timeout_ms: u64,
    },
}

impl When {
    /// Right after `event`, waiting for it at most `timeout_ms`.
    pub fn after(event: Event, timeout_ms: u64) -> When {
        When::After {
            event,
            delay_ms: 0,
            timeout_ms,
        }
    }

    /// `delay_ms` after `event`, waiting for it at most `timeout_ms`.
    pub fn after_by(event: Event, delay_ms: u64, timeout_ms: u64) -> When {
        When::After {
            event,
            delay_ms,
            timeout_ms,
        }
    }
}

/// An action and when it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Step<A> {
    /// A time after the workload started, or a delay after an event; jitter moves the time,
    /// never the step's place in the order.
    pub when: When,
    /// What to do.
    pub action: Action<A>,
}

impl<A: FamilyAction> Step<A> {
    /// `action` `delay_ms` after some client entered its critical section (waiting for
    /// that at most `timeout_ms`): the window of a fault that must hit a holder, so that
    /// it reproduces on every run.
    pub fn after_entry(delay_ms: u64, timeout_ms: u64, action: Action<A>) -> Self {
        Step {
            when: When::after_by(Event::Entered(Target::AnyClient), delay_ms, timeout_ms),
            action,
        }
    }

    /// The planned step as JSON, for the header.
    pub fn to_json(&self) -> Value {
        let target = match self.action {
            // The run's node names and client count are not known here: bits name them.
            Action::Split { nodes, clients } => {
                let bits = |mask: u32, what: &str| {
                    let on: Vec<String> = (0..32)
                        .filter(|&b| split::on_first_side(mask.into(), b))
                        .map(|b| format!("{what}{b}"))
                        .collect();
                    on.join(", ")
                };
                format!(
                    "{} with {} | every other node and client",
                    bits(nodes, "node "),
                    bits(clients, "c")
                )
            }
            _ => self.action.target().to_string(),
        };
        let mut v = self.action.to_json(&target);
        match self.when {
            When::At(ms) => v["at_ms"] = json!(ms),
            When::After {
                event,
                delay_ms,
                timeout_ms,
            } => {
                v["after"] = json!(event.to_string());
                v["delay_ms"] = json!(delay_ms);
                v["timeout_ms"] = json!(timeout_ms);
            }
        }
        v
    }
}

/// A whole schedule, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule<A> {
    /// In the order they run, each at its jittered time; the history header records them.
    pub steps: Vec<Step<A>>,
}

impl<A: FamilyAction> Schedule<A> {
    /// Builds a schedule from planned steps, each delay moved by up to ±`jitter_pct` %
    /// (of its gap to the step before, for a timed step), drawn from `seed`: different
    /// seeds probe different timings, one seed always gives the same schedule. The
    /// order never changes.
    pub fn jittered(planned: &[Step<A>], jitter_pct: u64, seed: u64) -> Schedule<A> {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x006e_656d_6573_6973);
        let mut jitter = |gap: u64| {
            let spread = gap * jitter_pct / 100;
            let offset = if spread > 0 {
                rng.random_range(0..=2 * spread)
            } else {
                spread
            };
            (gap + offset).saturating_sub(spread)
        };
        let mut steps = Vec::with_capacity(planned.len());
        let mut prev_planned = 0u64;
        let mut prev_at = 0u64;
        for step in planned {
            let when = match step.when {
                When::At(at) => {
                    let shifted = prev_at + jitter(at.saturating_sub(prev_planned));
                    let at_ms = shifted.max(prev_at);
                    prev_planned = at;
                    prev_at = at_ms;
                    When::At(at_ms)
                }
                When::After {
                    event,
                    delay_ms,
                    timeout_ms,
                } => When::After {
                    event,
                    delay_ms: jitter(delay_ms),
                    timeout_ms,
                },
            };
            steps.push(Step {
                when,
                action: step.action.clone(),
            });
        }
        Schedule { steps }
    }

    /// The steps as JSON values, for the history header.
    pub fn to_header(&self) -> Vec<Value> {
        self.steps.iter().map(Step::to_json).collect()
    }
}

impl<A: FamilyAction> Serialize for Schedule<A> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_header().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Cut;

    impl FamilyAction for Cut {
        fn name(&self) -> &'static str {
            "cut"
        }
        fn realises(&self) -> Realises {
            Realises::Beyond
        }
        fn target(&self) -> Target {
            Target::Primary
        }
    }

    fn plan() -> Vec<Step<Cut>> {
        vec![
            Step {
                when: When::At(0),
                action: Action::Family(Cut),
            },
            Step {
                when: When::At(800),
                action: Action::Kill(Target::Primary),
            },
            Step {
                when: When::after_by(Event::FirstGrant, 500, 5_000),
                action: Action::client(Fault::Pause, Target::AnyClient, 2000),
            },
        ]
    }

    #[test]
    fn one_seed_one_schedule_and_order_is_kept() {
        let a = Schedule::jittered(&plan(), 20, 7);
        assert_eq!(a, Schedule::jittered(&plan(), 20, 7));
        let When::At(kill) = a.steps[1].when else {
            panic!("{a:?}")
        };
        assert!((640..=960).contains(&kill), "{a:?}");
        let When::After { delay_ms, .. } = a.steps[2].when else {
            panic!("{a:?}")
        };
        assert!((400..=600).contains(&delay_ms), "{a:?}");
        let json = a.to_header();
        assert_eq!(json[0]["fault"], "cut");
        assert_eq!(json[1]["fault"], "kill");
        assert_eq!(json[1]["target"], "primary");
        assert_eq!(json[2]["ms"], 2000);
        assert_eq!(json[2]["after"], "the first grant");
        assert_eq!(json[2]["target"], "any client");
    }
}
