//! A user's etcd lock protocol: the requests of acquire and release as data — a `Txn`
//! with its compares, success and failure requests, or a single `put`, `get`,
//! `delete`, `revoke` — in the same vocabulary run histories record
//! ([`EtcdCommand`]), with placeholders, and what each reply means. The model runs it
//! as [`crate::etcd::model::Lock::Described`].
//!
//! A session lease (`lease = true`) is taken before the first step and kept alive by
//! the client while it runs, as etcd's `concurrency.Session` does; a renewal is that
//! keep-alive, so an etcd protocol has no renew steps.

use crate::etcd::spec::{EtcdCommand, EtcdReply, LeaseId};

pub mod check;
pub mod file;
mod request;

pub use request::{EtcdFill, Request};

use super::outcome::{numbered, OnBusy, Operation, Outcome};
use super::ProtocolError;

/// The placeholders an etcd request may use.
pub const PLACEHOLDERS: &[&str] = &["{key}", "{token}", "{lease}", "{rev}"];

/// An etcd lock protocol, checked when built: every request one the spec runs, every
/// placeholder known, every reply pattern one the request can get.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdProtocol {
    /// Its name, for reports.
    pub name: String,
    /// Each client takes a session lease (the model's TTL) before its first step and
    /// keeps it alive while it runs; `{lease}` is its id.
    pub lease: bool,
    /// The protected resource refuses a `{rev}` below the highest it saw.
    pub fencing: bool,
    /// What a client does when refused.
    pub on_busy: OnBusy,
    /// How many times a model's client tries before it gives up (`None`: no bound).
    pub attempts: Option<u8>,
    /// The acquire's steps.
    pub acquire: Vec<EtcdStep>,
    /// The release's steps.
    pub release: Vec<EtcdStep>,
}

/// One step: the request, and what its replies mean (tried in order; `any` last).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdStep {
    /// The request, placeholders unfilled.
    pub send: Request,
    /// The outcomes by pattern.
    pub outcomes: Vec<(Pattern, Outcome)>,
    /// Where it was written (`lock.toml:12`).
    pub at: String,
}

impl EtcdStep {
    /// The outcome of `reply`, or `default` when no pattern matches it.
    pub fn outcome(&self, reply: &EtcdReply, default: Outcome) -> Outcome {
        let specific = self.outcomes.iter().filter(|(p, _)| *p != Pattern::Any);
        let any = self.outcomes.iter().filter(|(p, _)| *p == Pattern::Any);
        specific
            .chain(any)
            .find(|(p, _)| p.matches(reply))
            .map_or(default, |(_, o)| *o)
    }

    /// Whether some pattern leads to `o`.
    pub fn can(&self, o: Outcome) -> bool {
        self.outcomes.iter().any(|(_, x)| *x == o)
    }
}

/// A pattern an etcd reply may match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `any`: every reply.
    Any,
    /// `succeeded`: a `Txn` whose compares held.
    Succeeded,
    /// `failed`: a `Txn` whose compares did not.
    Failed,
    /// `found`: a range that found a key.
    Found,
    /// `empty`: a range that found none.
    Empty,
    /// `deleted`: a delete that removed a key.
    Deleted,
    /// `nothing-deleted`: a delete that removed none.
    NothingDeleted,
    /// `ok`: a put or revoke that was done.
    Ok,
    /// `lease-not-found`: the lease named is gone (expired or revoked).
    LeaseNotFound,
}

impl Pattern {
    /// Every pattern with its name.
    const NAMES: &'static [(&'static str, Pattern)] = &[
        ("any", Pattern::Any),
        ("succeeded", Pattern::Succeeded),
        ("failed", Pattern::Failed),
        ("found", Pattern::Found),
        ("empty", Pattern::Empty),
        ("deleted", Pattern::Deleted),
        ("nothing-deleted", Pattern::NothingDeleted),
        ("ok", Pattern::Ok),
        ("lease-not-found", Pattern::LeaseNotFound),
    ];

    /// Reads a pattern by its name.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let t = text.trim();
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == t)
            .map(|(_, p)| *p)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!(
                    "`{text}` is no etcd reply pattern: use {}",
                    names.join(", ")
                )
            })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("any", |(n, _)| n)
    }

    /// Whether `reply` matches.
    pub fn matches(self, reply: &EtcdReply) -> bool {
        match (self, reply) {
            (Pattern::Any, _) => true,
            (Pattern::Succeeded, EtcdReply::Txn { succeeded, .. }) => *succeeded,
            (Pattern::Failed, EtcdReply::Txn { succeeded, .. }) => !*succeeded,
            (Pattern::Found, EtcdReply::Kvs(kvs)) => !kvs.is_empty(),
            (Pattern::Empty, EtcdReply::Kvs(kvs)) => kvs.is_empty(),
            (Pattern::Deleted, EtcdReply::Deleted { deleted }) => *deleted > 0,
            (Pattern::NothingDeleted, EtcdReply::Deleted { deleted }) => *deleted == 0,
            (Pattern::Ok, EtcdReply::Put { .. } | EtcdReply::Revoked) => true,
            (Pattern::LeaseNotFound, EtcdReply::LeaseNotFound) => true,
            _ => false,
        }
    }

    /// Whether a reply to `cmd` can match: `succeeded` answers only a `txn`.
    pub fn fits(self, cmd: &EtcdCommand) -> bool {
        use EtcdCommand as C;
        match self {
            Pattern::Any => true,
            Pattern::Succeeded | Pattern::Failed => matches!(cmd, C::Txn { .. }),
            Pattern::Found | Pattern::Empty => {
                matches!(
                    cmd,
                    C::Get { .. } | C::FirstCreate { .. } | C::LastCreateBefore { .. }
                )
            }
            Pattern::Deleted | Pattern::NothingDeleted => matches!(cmd, C::Delete { .. }),
            Pattern::Ok => matches!(cmd, C::Put { .. } | C::Revoke { .. }),
            Pattern::LeaseNotFound => {
                matches!(
                    cmd,
                    C::Put { lease: Some(_), .. } | C::Revoke { .. } | C::Txn { .. }
                )
            }
        }
    }
}

/// The revision of the put a reply reports (a `put`'s, or one inside a `Txn` that
/// ran): `{rev}`, the client's fencing token.
pub fn put_revision(reply: &EtcdReply) -> Option<u64> {
    match reply {
        EtcdReply::Put { revision } => Some(*revision),
        EtcdReply::Txn { responses, .. } => responses.iter().find_map(put_revision),
        _ => None,
    }
}

impl EtcdProtocol {
    /// A protocol named `name`, built step by step (see [`EtcdStepBuilder`]).
    pub fn builder(name: &str) -> EtcdProtocolBuilder {
        EtcdProtocolBuilder {
            protocol: EtcdProtocol {
                name: name.to_string(),
                lease: false,
                fencing: false,
                on_busy: OnBusy::Retry,
                attempts: None,
                acquire: Vec::new(),
                release: Vec::new(),
            },
            pending: Vec::new(),
        }
    }

    /// The request of acquire step `stage` (`None` past the last step).
    pub fn acquire_request(&self, stage: u8, f: &EtcdFill<'_>) -> Option<EtcdCommand> {
        self.acquire.get(usize::from(stage))?.send.command(f).ok()
    }

    /// What acquire step `stage`'s reply means: a reply no pattern matches is a refusal.
    pub fn acquired(&self, stage: u8, reply: &EtcdReply) -> Outcome {
        self.acquire
            .get(usize::from(stage))
            .map_or(Outcome::Busy, |s| s.outcome(reply, Outcome::Busy))
    }

    /// The request of release step `stage` (`None`: the release is over).
    pub fn release_request(&self, stage: u8, f: &EtcdFill<'_>) -> Option<EtcdCommand> {
        self.release.get(usize::from(stage))?.send.command(f).ok()
    }

    /// What release step `stage`'s reply means: a reply no pattern matches ends the
    /// release.
    pub fn released(&self, stage: u8, reply: &EtcdReply) -> Outcome {
        self.release
            .get(usize::from(stage))
            .map_or(Outcome::Released, |s| s.outcome(reply, Outcome::Released))
    }
}

/// A step being described: a request as TOML, then what its replies mean.
#[derive(Clone, Debug)]
pub struct EtcdStepBuilder {
    send: Result<Request, String>,
    outcomes: Vec<(String, Outcome)>,
    at: String,
}

impl EtcdStepBuilder {
    /// A request written as a protocol file writes it, in TOML: `txn = { compare =
    /// [{ create-revision = { key = "{key}", rev = 0 } }], success = [{ put = { key =
    /// "{key}", value = "{token}", lease = "{lease}" } }] }`.
    pub fn send(toml_request: &str) -> EtcdStepBuilder {
        let send = toml::from_str::<toml::Table>(toml_request)
            .map_err(|e| format!("the request is no TOML table: {}", e.message().trim()))
            .map(|t| Request::of(&toml::Value::Table(t)));
        EtcdStepBuilder {
            send,
            outcomes: Vec::new(),
            at: String::new(),
        }
    }

    /// A request already read from a protocol file.
    pub fn request(value: &toml::Value) -> EtcdStepBuilder {
        EtcdStepBuilder {
            send: Ok(Request::of(value)),
            outcomes: Vec::new(),
            at: String::new(),
        }
    }

    /// Where it was written, for messages.
    pub fn at(mut self, at: &str) -> EtcdStepBuilder {
        self.at = at.to_string();
        self
    }

    /// Replies matching `pattern` (see [`Pattern::parse`]) mean `outcome`.
    pub fn on(mut self, pattern: &str, outcome: Outcome) -> EtcdStepBuilder {
        self.outcomes.push((pattern.to_string(), outcome));
        self
    }

    /// Replies matching `pattern` grant the lock.
    pub fn granted(self, pattern: &str) -> EtcdStepBuilder {
        self.on(pattern, Outcome::Granted)
    }

    /// Replies matching `pattern` mean someone else holds it.
    pub fn busy(self, pattern: &str) -> EtcdStepBuilder {
        self.on(pattern, Outcome::Busy)
    }

    /// Replies matching `pattern` go on with the next step.
    pub fn next(self, pattern: &str) -> EtcdStepBuilder {
        self.on(pattern, Outcome::Next)
    }

    /// Replies matching `pattern` mean the lock was given back.
    pub fn released(self, pattern: &str) -> EtcdStepBuilder {
        self.on(pattern, Outcome::Released)
    }

    /// Replies matching `pattern` mean the client did not hold it.
    pub fn not_held(self, pattern: &str) -> EtcdStepBuilder {
        self.on(pattern, Outcome::NotHeld)
    }

    fn build(self, op: Operation, last: bool, lease: bool) -> Result<EtcdStep, String> {
        let send = self.send?;
        if let Some(p) = send.unknown_placeholder() {
            return Err(format!(
                "`{p}` is no placeholder: use {}",
                PLACEHOLDERS.join(", ")
            ));
        }
        if send.uses("{lease}") && !lease {
            return Err(
                "`{lease}` is the session lease: add `lease = true` at the top of the file".into(),
            );
        }
        let probe = send.command(&EtcdFill::PROBE)?;
        request::allowed(&probe)?;
        let mut outcomes = Vec::new();
        for (text, o) in self.outcomes {
            op.admits(o, last)?;
            let pattern = Pattern::parse(&text)?;
            if !pattern.fits(&probe) {
                return Err(format!(
                    "`{}` never answers a {} request",
                    pattern.name(),
                    request::kind(&probe)
                ));
            }
            outcomes.push((pattern, o));
        }
        Ok(EtcdStep {
            send,
            outcomes,
            at: self.at,
        })
    }
}

/// Builds an [`EtcdProtocol`]; [`EtcdProtocolBuilder::build`] says what is wrong.
#[derive(Clone, Debug)]
pub struct EtcdProtocolBuilder {
    protocol: EtcdProtocol,
    pending: Vec<(Operation, EtcdStepBuilder)>,
}

impl EtcdProtocolBuilder {
    /// Clients take a session lease and keep it alive (`{lease}`).
    pub fn lease(mut self, yes: bool) -> Self {
        self.protocol.lease = yes;
        self
    }

    /// The resource checks `{rev}` as a fencing token.
    pub fn fencing(mut self, yes: bool) -> Self {
        self.protocol.fencing = yes;
        self
    }

    /// What a refused client does.
    pub fn on_busy(mut self, on_busy: OnBusy) -> Self {
        self.protocol.on_busy = on_busy;
        self
    }

    /// A model's client tries at most `n` times.
    pub fn attempts(mut self, n: u8) -> Self {
        self.protocol.attempts = Some(n.max(1));
        self
    }

    /// Adds an acquire step.
    pub fn acquire(mut self, step: EtcdStepBuilder) -> Self {
        self.pending.push((Operation::Acquire, step));
        self
    }

    /// Adds a release step.
    pub fn release(mut self, step: EtcdStepBuilder) -> Self {
        self.pending.push((Operation::Release, step));
        self
    }

    /// The protocol, or the first thing wrong with it.
    pub fn build(self) -> Result<EtcdProtocol, ProtocolError> {
        let mut p = self.protocol;
        for (op, n, last, step) in numbered(self.pending) {
            let at = step.at.clone();
            let built = step
                .build(op, last, p.lease)
                .map_err(|m| ProtocolError::at(&at, format!("{} step {n}: {m}", op.key())))?;
            match op {
                Operation::Acquire => p.acquire.push(built),
                _ => p.release.push(built),
            }
        }
        if p.acquire.is_empty() || p.release.is_empty() {
            return Err(ProtocolError::at(
                "",
                "a protocol needs at least one acquire and one release step".into(),
            ));
        }
        if !p.acquire.iter().any(|s| s.can(Outcome::Granted)) {
            return Err(ProtocolError::at(
                &p.acquire[0].at,
                "no acquire step says which reply grants the lock: add `granted = \"…\"`".into(),
            ));
        }
        let puts = |s: &EtcdStep| {
            s.send
                .command(&EtcdFill::PROBE)
                .is_ok_and(|c| request::puts(&c))
        };
        if p.fencing && !p.acquire.iter().any(puts) {
            return Err(ProtocolError::at(
                &p.acquire[0].at,
                "`fencing = true` fences with `{rev}`, the revision of the acquire's put, and no acquire step puts".into(),
            ));
        }
        Ok(p)
    }
}

/// The lease a client fills `{lease}` with, when it has none (never sent: a protocol
/// that uses `{lease}` takes a lease).
pub const NO_LEASE: LeaseId = 0;

#[cfg(test)]
mod tests;
