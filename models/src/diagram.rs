//! A story's steps as a sequence diagram: who the participants are (lanes), who sent
//! what to whom at each step and what came back (arrows), where a fault struck (marks),
//! and each participant's state after the step (which node holds the key, until when,
//! what each client believes, who is in the critical section).
//!
//! Each family fills this in from its own model state in its `narration.rs`, next to
//! the words of the same step, so pictures never depend on parsing the text. A family
//! that does not (yet) gets [`Narrate`](crate::check::Narrate)'s defaults: one lane
//! carrying each step's text.

use serde::Serialize;

/// What a lane stands for; the page styles each kind and orders nothing by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LaneKind {
    /// A lock client.
    Client,
    /// A server node (Redis master or replica, Redlock node, SQL server).
    Node,
    /// A process that acts on the servers (Sentinel, a reaper job, an operator).
    Agent,
    /// The protected resource.
    Resource,
}

/// One participant of the diagram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Lane {
    /// Stable id, used by arrows and marks (`c0`, `redis1`, `sentinel`).
    pub id: String,
    /// What the page prints at the top of the lane.
    pub label: String,
    /// What it stands for.
    pub kind: LaneKind,
}

impl Lane {
    /// A lane.
    pub fn new(id: impl Into<String>, label: impl Into<String>, kind: LaneKind) -> Self {
        Lane {
            id: id.into(),
            label: label.into(),
            kind,
        }
    }
}

/// A participant's state after a step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LaneState {
    /// The lane's id.
    pub lane: String,
    /// A few words: `master`, `demoted`, `acquiring`, `paused`, `2 inside`.
    pub status: String,
    /// A client: until when it believes it holds the lock. A node: when the lock key it
    /// stores expires, in real time.
    pub lease_until: Option<u64>,
    /// A node: the lock key's value it stores (`None`: it has no live key).
    pub holds: Option<String>,
    /// The client lane whose lock a node stores, for its colour.
    pub owner: Option<String>,
    /// A client inside its critical section.
    pub critical: bool,
    /// Down, paused, crashed, demoted: drawn faded.
    pub impaired: bool,
    /// A client cut off from the servers (a partition): drawn as a wall between its
    /// lane and theirs for as long as the cut lasts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// A message between two lanes, with the reply that came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Arrow {
    /// Sender lane.
    pub from: String,
    /// Receiver lane.
    pub to: String,
    /// The command as sent.
    pub label: String,
    /// The reply, if there was one.
    pub reply: Option<String>,
    /// The message is an injected fault (a promotion, a kill).
    pub fault: bool,
    /// The message never arrived: a write that was never replicated, a request a cut
    /// dropped. Drawn dashed and crossed out: the crux of most stories.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
}

/// Something that happened at one lane (or across the diagram, for `lane: None`) and
/// was not a message: a pause, a crash, a clock jump, time passing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Mark {
    /// Where it happened; `None` for the whole system (time passing).
    pub lane: Option<String>,
    /// What happened, in a few words.
    pub label: String,
    /// It is an injected fault.
    pub fault: bool,
}

/// What one step shows: its messages and marks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Exchange {
    /// Messages sent in this step.
    pub arrows: Vec<Arrow>,
    /// Other events in this step.
    pub marks: Vec<Mark>,
}

impl Exchange {
    /// One message.
    pub fn arrow(
        from: impl Into<String>,
        to: impl Into<String>,
        label: impl Into<String>,
        reply: Option<String>,
    ) -> Self {
        Exchange {
            arrows: vec![Arrow {
                from: from.into(),
                to: to.into(),
                label: label.into(),
                reply,
                fault: false,
                lost: false,
            }],
            marks: Vec::new(),
        }
    }

    /// One event at `lane` (`None`: the whole system).
    pub fn mark(lane: Option<String>, label: impl Into<String>, fault: bool) -> Self {
        Exchange {
            arrows: Vec::new(),
            marks: vec![Mark {
                lane,
                label: label.into(),
                fault,
            }],
        }
    }

    /// Time passing to `t`, drawn across every lane.
    pub fn tick(t: u64) -> Self {
        Exchange::mark(None, format!("time passes to t={t}"), false)
    }
}

/// One step of the diagram: what happened and everyone's state after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Scene {
    /// The model clock after the step, for models that have one.
    pub now: Option<u64>,
    /// The step's messages and marks (empty for the initial state).
    #[serde(flatten)]
    pub exchange: Exchange,
    /// Every lane's state after it, in lane order (lanes without one are left blank).
    pub lanes: Vec<LaneState>,
}

/// The lanes of a model and their initial state: what a page draws when there is no
/// counterexample to tell.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Cast {
    /// The participants.
    pub lanes: Vec<Lane>,
    /// Their state before any step.
    pub initial: Scene,
}

/// The lane id of client `c`.
pub fn client(c: impl std::fmt::Display) -> String {
    format!("c{c}")
}

/// The state of client lane `c`: the lane shared by every family's clients.
pub fn client_state(
    c: impl std::fmt::Display,
    status: impl Into<String>,
    lease_until: Option<u64>,
    critical: bool,
    impaired: bool,
) -> LaneState {
    LaneState {
        lane: client(c),
        status: status.into(),
        lease_until,
        critical,
        impaired,
        ..LaneState::default()
    }
}

/// A server lane: its `status`, and the lock it stores as `(what, owner lane, expiry)`.
pub fn holder_state(
    lane: &str,
    status: String,
    holder: Option<(String, Option<String>, Option<u64>)>,
) -> LaneState {
    LaneState {
        lane: lane.into(),
        status,
        lease_until: holder.as_ref().and_then(|h| h.2),
        owner: holder.as_ref().and_then(|h| h.1.clone()),
        holds: holder.map(|h| h.0),
        ..LaneState::default()
    }
}

/// The resource lane's state from the clients inside the critical section (`extra`:
/// the resource's own state, e.g. its counter).
pub fn resource_state(inside: &[usize], extra: Option<String>) -> LaneState {
    let who = match inside {
        [] => "free".to_string(),
        [c] => format!("c{c} inside"),
        many => format!(
            "{} inside!",
            many.iter()
                .map(|c| format!("c{c}"))
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    };
    let status = match extra {
        Some(e) => format!("{who}; {e}"),
        None => who,
    };
    LaneState {
        lane: "resource".into(),
        status,
        critical: inside.len() > 1,
        ..LaneState::default()
    }
}

/// A critical-section step on the protected resource, as an arrow from client `c`: the
/// read (`read`: with the `value` it saw) or the write — with its token when the
/// resource is `fenced`, and then `accepted` or refused as stale. Every family's
/// clients touch the resource this way ([`crate::resource`]).
pub fn resource_access(
    c: impl std::fmt::Display,
    read: bool,
    token: u64,
    fenced: bool,
    value: impl std::fmt::Display,
    accepted: bool,
) -> Exchange {
    let (label, reply) = match (read, fenced) {
        (true, _) => (format!("read (token {token})"), value.to_string()),
        (false, true) => (
            format!("write (token {token})"),
            if accepted {
                "ok"
            } else {
                "refused: stale token"
            }
            .to_string(),
        ),
        (false, false) => ("write".to_string(), "ok".to_string()),
    };
    Exchange::arrow(client(c), "resource", label, Some(reply))
}

/// The protected resource's lane (id and label `resource`), last in every diagram: where
/// `resource_access` arrows land.
pub fn resource_lane() -> Lane {
    Lane::new("resource", "resource", LaneKind::Resource)
}
