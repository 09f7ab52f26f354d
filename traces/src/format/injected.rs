//! A nemesis event's value, typed: what was done, and to whom. A history writes it as
//! one JSON object, `{"fault": NAME, "target": WHO, …}`; the harness writes it through
//! [`Injected::to_json`] and every check reads it through [`Event::injected`], so that
//! the names live here and nowhere else, and a new client fault is a compile error in
//! the few matches below that decide what it does to a client.

use serde_json::{Map, Value};

use locklab_models::registry::Fault;

use super::{Event, OpKind};

/// What a nemesis event says happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Injected {
    /// What was done.
    pub what: What,
    /// To whom: a client (`c0`), a server (`n2`, `replica1`), "any client" for a
    /// request no client has taken yet; `None` where the history names none.
    pub target: Option<String>,
    /// The object's other fields, kept as written (`addr`, `keep_data`, `offset`,
    /// `then`, an imported history's own).
    pub rest: Map<String, Value>,
}

/// The kinds of nemesis events: the `fault` field.
#[derive(Clone, Debug, PartialEq)]
pub enum What {
    /// A client made to suffer one of the model's faults, or the end of one
    /// (`client-pause`, `client-resume`, …), lasting `ms` where it has a length.
    Client {
        /// The fault or its end.
        step: ClientStep,
        /// How long it lasts.
        ms: Option<u64>,
    },
    /// The reply to one of the target's requests was lost on its way back
    /// (`lost-reply`): the request may have taken effect.
    LostReply,
    /// An external client's traffic broke the family's protocol (`client-protocol`),
    /// named by `problem`.
    Protocol {
        /// The problem's kind.
        problem: String,
    },
    /// Sentinel promoted the target (`failover`); the client endpoint that follows
    /// Sentinel (endpoint 0 where the history does not say) reaches it from now on.
    Failover {
        /// The endpoint that moved.
        endpoint: Option<u64>,
    },
    /// A step of the schedule that could not be taken (`skipped`); the target names
    /// the step and what it was aimed at (`client-pause c1`).
    Skipped,
    /// Anything else done to the servers or the network, by its name (`kill`,
    /// `restart`, `cut-replication`, …, or what an imported history calls it).
    Server(String),
}

/// What a client fault event did to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientStep {
    /// It suffers the model's fault (`client-pause`, `client-crash`, …).
    Suffers(Fault),
    /// Its pause ended (`client-resume`).
    Resume,
    /// Its partition healed (`client-heal`).
    Heal,
}

/// The prefix of every client fault's name.
const CLIENT: &str = "client-";

impl ClientStep {
    /// The name a history gives it (`client-pause`).
    pub fn name(self) -> String {
        match self {
            ClientStep::Suffers(f) => format!("{CLIENT}{f}"),
            ClientStep::Resume => format!("{CLIENT}resume"),
            ClientStep::Heal => format!("{CLIENT}heal"),
        }
    }

    fn of(name: &str) -> Option<ClientStep> {
        match name.strip_prefix(CLIENT)? {
            "resume" => Some(ClientStep::Resume),
            "heal" => Some(ClientStep::Heal),
            f => f.parse().ok().map(ClientStep::Suffers),
        }
    }

    /// Whether the client does nothing more after it: dead, or its worker hung for
    /// good. Its lock may be left taken by nobody who will release it, and it asks
    /// for nothing again.
    pub fn ends_the_client(self) -> bool {
        match self {
            ClientStep::Suffers(f) => match f {
                Fault::Crash | Fault::Hang => true,
                Fault::Pause
                | Fault::Failover
                | Fault::Restart
                | Fault::Jump
                | Fault::Kill
                | Fault::Skew
                | Fault::Partition
                | Fault::Split
                | Fault::Drop
                | Fault::Revoke
                | Fault::ReaperDies
                | Fault::Rollback => false,
            },
            ClientStep::Resume | ClientStep::Heal => false,
        }
    }

    /// Whether it cuts the client off from the servers (`Some(true)`), heals such a
    /// cut (`Some(false)`), or leaves its reach as it was (`None`).
    pub fn cuts_off(self) -> Option<bool> {
        match self {
            ClientStep::Suffers(f) => match f {
                Fault::Partition => Some(true),
                Fault::Pause
                | Fault::Crash
                | Fault::Hang
                | Fault::Failover
                | Fault::Restart
                | Fault::Jump
                | Fault::Kill
                | Fault::Skew
                | Fault::Split
                | Fault::Drop
                | Fault::Revoke
                | Fault::ReaperDies
                | Fault::Rollback => None,
            },
            ClientStep::Heal => Some(false),
            ClientStep::Resume => None,
        }
    }
}

impl What {
    /// What a client fault event did to its client; `None` for any other event.
    pub fn client_step(&self) -> Option<ClientStep> {
        match self {
            What::Client { step, .. } => Some(*step),
            What::LostReply
            | What::Protocol { .. }
            | What::Failover { .. }
            | What::Skipped
            | What::Server(_) => None,
        }
    }

    /// The `fault` field's text.
    pub fn name(&self) -> String {
        match self {
            What::Client { step, .. } => step.name(),
            What::LostReply => "lost-reply".into(),
            What::Protocol { .. } => format!("{CLIENT}protocol"),
            What::Failover { .. } => "failover".into(),
            What::Skipped => "skipped".into(),
            What::Server(name) => name.clone(),
        }
    }
}

impl Injected {
    /// `what` done to `target`.
    pub fn new(what: What, target: impl Into<String>) -> Injected {
        Injected {
            what,
            target: Some(target.into()),
            rest: Map::new(),
        }
    }

    /// Client fault `step` (lasting `ms`) on `target`.
    pub fn client(step: ClientStep, target: impl Into<String>, ms: Option<u64>) -> Injected {
        Injected::new(What::Client { step, ms }, target)
    }

    /// A step that could not be taken: `step` (its name) aimed at `target`.
    pub fn skipped(step: &str, target: &str) -> Injected {
        Injected::new(What::Skipped, format!("{step} {target}"))
    }

    /// With field `key` set to `value`, beside the typed ones.
    pub fn with(mut self, key: &str, value: Value) -> Injected {
        self.rest.insert(key.to_string(), value);
        self
    }

    /// The target as text (empty where none is named).
    pub fn target(&self) -> &str {
        self.target.as_deref().unwrap_or("")
    }

    /// The target's client number, where the target is a client (`c3`).
    pub fn client_target(&self) -> Option<u32> {
        self.target.as_deref()?.strip_prefix('c')?.parse().ok()
    }

    /// Reads a nemesis event's value; `None` for one that is no object with a `fault`
    /// name (an imported history's free-form note).
    pub fn of(v: &Value) -> Option<Injected> {
        let mut rest = v.as_object()?.clone();
        let name = match rest.remove("fault")? {
            Value::String(s) => s,
            _ => return None,
        };
        let target = match rest.remove("target") {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                rest.insert("target".into(), other);
                None
            }
            None => None,
        };
        let mut take_u64 = |key: &str| match rest.get(key).and_then(Value::as_u64) {
            Some(n) => {
                rest.remove(key);
                Some(n)
            }
            None => None,
        };
        let what = match name.as_str() {
            "lost-reply" => What::LostReply,
            "skipped" => What::Skipped,
            "failover" => What::Failover {
                endpoint: take_u64("endpoint"),
            },
            "client-protocol" => match rest.get("problem").and_then(Value::as_str) {
                Some(p) => {
                    let problem = p.to_string();
                    rest.remove("problem");
                    What::Protocol { problem }
                }
                None => What::Server(name),
            },
            _ => match ClientStep::of(&name) {
                Some(step) => What::Client {
                    step,
                    ms: take_u64("ms"),
                },
                None => What::Server(name),
            },
        };
        Some(Injected { what, target, rest })
    }

    /// The value a history writes: `{"fault": …, "target": …, …}`.
    pub fn to_json(&self) -> Value {
        let mut m = self.rest.clone();
        m.insert("fault".into(), Value::String(self.what.name()));
        if let Some(t) = &self.target {
            m.insert("target".into(), Value::String(t.clone()));
        }
        match &self.what {
            What::Client { ms: Some(ms), .. } => {
                m.insert("ms".into(), Value::from(*ms));
            }
            What::Protocol { problem } => {
                m.insert("problem".into(), Value::String(problem.clone()));
            }
            What::Failover {
                endpoint: Some(endpoint),
            } => {
                m.insert("endpoint".into(), Value::from(*endpoint));
            }
            What::Client { ms: None, .. }
            | What::Failover { endpoint: None }
            | What::LostReply
            | What::Skipped
            | What::Server(_) => {}
        }
        Value::Object(m)
    }
}

impl std::fmt::Display for Injected {
    /// As a timeline line names it: `client-pause c0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.what.name())?;
        if let Some(t) = &self.target {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

impl Event {
    /// What this nemesis event says was done; `None` for any other event, and for a
    /// nemesis event whose value names no fault.
    pub fn injected(&self) -> Option<Injected> {
        if self.op != OpKind::Nemesis {
            return None;
        }
        Injected::of(&self.value_json()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every value the harness writes reads back as what it was, and is written again
    /// byte for byte.
    #[test]
    fn values_read_back_and_write_again_unchanged() {
        let written = [
            json!({"fault": "client-pause", "target": "c0", "ms": 900}),
            json!({"fault": "client-pause", "target": "any client", "ms": 900, "then": "steps on once another client has entered"}),
            json!({"fault": "client-resume", "target": "c0"}),
            json!({"fault": "client-crash", "target": "c1"}),
            json!({"fault": "client-hang", "target": "c1"}),
            json!({"fault": "client-partition", "target": "c2", "ms": 1500}),
            json!({"fault": "client-heal", "target": "c2"}),
            json!({"fault": "client-drop", "target": "c0"}),
            json!({"fault": "client-rollback", "target": "c0"}),
            json!({"fault": "client-protocol", "target": "c0", "problem": "unknown-command"}),
            json!({"fault": "lost-reply", "target": "c0"}),
            json!({"fault": "failover", "target": "replica1", "addr": "10.0.0.2:6379", "endpoint": 0}),
            json!({"fault": "skipped", "target": "client-pause c1"}),
            json!({"fault": "restart", "target": "n2", "keep_data": false}),
            json!({"fault": "clock", "target": "node0", "offset": 3}),
            json!({"fault": "partition", "value": [1, 2]}),
        ];
        for v in written {
            let i = Injected::of(&v).expect("a fault");
            assert_eq!(i.to_json().to_string(), v.to_string(), "{i:?}");
        }
        let pause = Injected::of(&json!({"fault": "client-pause", "target": "c0", "ms": 900}));
        assert_eq!(
            pause.map(|i| (i.client_target(), i.what)),
            Some((
                Some(0),
                What::Client {
                    step: ClientStep::Suffers(Fault::Pause),
                    ms: Some(900)
                }
            ))
        );
        assert_eq!(Injected::of(&json!("a note")), None);
        assert_eq!(Injected::of(&json!({"target": "c0"})), None);
    }

    /// Only a crash and a hang end a client; only a partition and its heal move its
    /// reach.
    #[test]
    fn what_a_client_step_does() {
        let ending: Vec<Fault> = Fault::ALL
            .iter()
            .copied()
            .filter(|f| ClientStep::Suffers(*f).ends_the_client())
            .collect();
        assert_eq!(ending, [Fault::Crash, Fault::Hang]);
        assert_eq!(ClientStep::Suffers(Fault::Partition).cuts_off(), Some(true));
        assert_eq!(ClientStep::Heal.cuts_off(), Some(false));
        assert_eq!(ClientStep::Resume.cuts_off(), None);
    }
}
