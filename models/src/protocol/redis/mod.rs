//! A user's Redis lock protocol: the steps of acquire, release and renew, each a
//! command of the spec's vocabulary or a Lua script, and what each reply means. The
//! model runs it as [`crate::redis::Protocol::Described`]; a real client sends the
//! same steps (scripts with `EVALSHA`).

use crate::redis::spec::{lua, RedisCommand, RedisReply, NONDETERMINISTIC, SPEC_COMMANDS};

pub mod check;
pub mod file;
pub mod steps;

use steps::{Fill, OnBusy, Outcome, Pattern, Send, Step, Template, TokenKind};

use super::outcome::{numbered, Operation};
use super::ProtocolError;

/// A Redis lock protocol, checked when built: every step is a command the spec runs or
/// a script that compiles and calls only such commands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedisProtocol {
    /// Its name, for reports.
    pub name: String,
    /// What a client writes as `{token}`.
    pub token: TokenKind,
    /// Each client enters twice (re-acquires while holding) and leaves twice.
    pub reentrant: bool,
    /// What a client does when refused.
    pub on_busy: OnBusy,
    /// How many times a model's client tries before it gives up (`None`: it retries
    /// as long as the search lets it). A bound of the model, as a horizon is: where a
    /// refused attempt writes (an `INCR` per try), unbounded retries never let the
    /// search close. A real client keeps retrying while its run lasts.
    pub attempts: Option<u8>,
    /// The acquire's steps.
    pub acquire: Vec<Step>,
    /// The release's steps.
    pub release: Vec<Step>,
    /// The renewal's steps (empty: the lease is never renewed).
    pub renew: Vec<Step>,
}

impl RedisProtocol {
    /// A protocol named `name`, built step by step (see [`StepBuilder`]).
    pub fn builder(name: &str) -> RedisProtocolBuilder {
        RedisProtocolBuilder {
            protocol: RedisProtocol {
                name: name.to_string(),
                token: TokenKind::Unique,
                reentrant: false,
                on_busy: OnBusy::Retry,
                attempts: None,
                acquire: Vec::new(),
                release: Vec::new(),
                renew: Vec::new(),
            },
            pending: Vec::new(),
        }
    }

    /// Whether the lock has a lease: some acquire step sends `{lease_ms}`.
    pub fn has_ttl(&self) -> bool {
        self.acquire.iter().any(|s| s.send.uses("{lease_ms}"))
    }

    /// Whether a grant carries a fencing token (an acquire step says `token = true`).
    pub fn fences(&self) -> bool {
        self.acquire.iter().any(|s| s.token)
    }

    /// The fencing token acquire step `stage`'s reply carries, if it is a token step
    /// and the reply an integer.
    pub fn token(&self, stage: u8, reply: &RedisReply) -> Option<i64> {
        let step = self.acquire.get(usize::from(stage))?;
        step.token.then(|| reply.as_int()).flatten()
    }

    /// Whether some step reads the client's clock (`{now_ms}`).
    pub fn uses_now(&self) -> bool {
        self.steps().any(|s| s.send.uses("{now_ms}"))
    }

    /// Whether some step sends or compares an earlier step's reply (`{reply}`).
    pub fn uses_reply(&self) -> bool {
        self.steps().any(Step::uses_reply)
    }

    fn steps(&self) -> impl Iterator<Item = &Step> {
        self.acquire.iter().chain(&self.release).chain(&self.renew)
    }

    /// The command of acquire step `stage` (`None` past the last step).
    pub fn acquire_command(&self, stage: u8, f: &Fill<'_>) -> Option<RedisCommand> {
        self.acquire.get(usize::from(stage))?.send.command(f)
    }

    /// What acquire step `stage`'s reply means: a reply no pattern matches is a refusal.
    pub fn acquired(&self, stage: u8, reply: &RedisReply, f: &Fill<'_>) -> Outcome {
        match self.acquire.get(usize::from(stage)) {
            Some(step) => step.outcome(reply, f, Outcome::Busy),
            None => Outcome::Busy,
        }
    }

    /// The command of release step `stage` (`None`: the release is over).
    pub fn release_command(&self, stage: u8, f: &Fill<'_>) -> Option<RedisCommand> {
        self.release.get(usize::from(stage))?.send.command(f)
    }

    /// What release step `stage`'s reply means: a reply no pattern matches ends the
    /// release.
    pub fn released(&self, stage: u8, reply: &RedisReply, f: &Fill<'_>) -> Outcome {
        match self.release.get(usize::from(stage)) {
            Some(step) => step.outcome(reply, f, Outcome::Released),
            None => Outcome::Released,
        }
    }

    /// The command of renew step `stage`.
    pub fn renew_command(&self, stage: u8, f: &Fill<'_>) -> Option<RedisCommand> {
        self.renew.get(usize::from(stage))?.send.command(f)
    }

    /// What renew step `stage`'s reply means: a reply no pattern matches is a lost lock.
    pub fn renewed(&self, stage: u8, reply: &RedisReply, f: &Fill<'_>) -> Outcome {
        match self.renew.get(usize::from(stage)) {
            Some(step) => step.outcome(reply, f, Outcome::Lost),
            None => Outcome::Lost,
        }
    }

    /// Every script's source with its SHA1, for a real client to load.
    pub fn scripts(&self) -> Vec<(String, std::sync::Arc<str>)> {
        let mut out: Vec<(String, std::sync::Arc<str>)> = Vec::new();
        for s in self.steps() {
            if let (Send::Script { sha, .. }, Some(src)) = (&s.send, s.send.script()) {
                if !out.iter().any(|(h, _)| h == sha) {
                    out.push((sha.clone(), src));
                }
            }
        }
        out
    }
}

/// A step being described: words or a script, then what its replies mean.
#[derive(Clone, Debug)]
pub struct StepBuilder {
    send: Result<Send, String>,
    outcomes: Vec<(String, Outcome)>,
    at: String,
    token: bool,
}

impl StepBuilder {
    /// A command as `redis-cli` takes it, with placeholders:
    /// `SET {key} {token} NX PX {lease_ms}`.
    pub fn send(words: &str) -> StepBuilder {
        let words: Vec<Template> = words
            .split_whitespace()
            .map(|w| Template(w.to_string()))
            .collect();
        StepBuilder {
            send: Ok(Send::Words(words)),
            outcomes: Vec::new(),
            at: String::new(),
            token: false,
        }
    }

    /// A Lua script, with `KEYS` and `ARGV` (placeholders allowed). Its source is
    /// checked (see [`lua::check`]) when the protocol is built.
    pub fn script(source: &str, keys: &[&str], args: &[&str]) -> StepBuilder {
        let t = |v: &[&str]| v.iter().map(|s| Template(s.to_string())).collect();
        let send = match lua::check(source) {
            Ok(()) => Ok(Send::Script {
                sha: lua::register(source),
                keys: t(keys),
                args: t(args),
            }),
            Err(e) => Err(format!("script line {}: {}", e.line, e.message)),
        };
        StepBuilder {
            send,
            outcomes: Vec::new(),
            at: String::new(),
            token: false,
        }
    }

    /// Where it was written, for messages.
    pub fn at(mut self, at: &str) -> StepBuilder {
        self.at = at.to_string();
        self
    }

    /// Its granted reply (an integer) is the client's fencing token, which the
    /// protected resource then checks.
    pub fn token(mut self) -> StepBuilder {
        self.token = true;
        self
    }

    /// Replies matching `pattern` (see [`Pattern::parse`]) mean `outcome`.
    pub fn on(mut self, pattern: &str, outcome: Outcome) -> StepBuilder {
        self.outcomes.push((pattern.to_string(), outcome));
        self
    }

    /// Replies matching `pattern` grant the lock.
    pub fn granted(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Granted)
    }

    /// Replies matching `pattern` mean someone else holds it.
    pub fn busy(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Busy)
    }

    /// Replies matching `pattern` go on with the next step.
    pub fn next(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Next)
    }

    /// Replies matching `pattern` mean the lock was given back.
    pub fn released(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Released)
    }

    /// Replies matching `pattern` mean the client did not hold it.
    pub fn not_held(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::NotHeld)
    }

    /// Replies matching `pattern` mean the lease was extended.
    pub fn renewed(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Renewed)
    }

    /// Replies matching `pattern` mean the lock is lost.
    pub fn lost(self, pattern: &str) -> StepBuilder {
        self.on(pattern, Outcome::Lost)
    }

    fn build(self, op: Operation, last: bool) -> Result<Step, String> {
        let send = self.send?;
        let templates: Vec<&Template> = match &send {
            Send::Words(w) => w.iter().collect(),
            Send::Script { keys, args, .. } => keys.iter().chain(args).collect(),
        };
        if let Some(p) = templates.iter().find_map(|t| t.unknown_placeholder()) {
            return Err(format!(
                "`{p}` is no placeholder: use {}",
                steps::PLACEHOLDERS.join(", ")
            ));
        }
        if let Send::Words(words) = &send {
            check_words(words)?;
        }
        let mut outcomes = Vec::new();
        for (text, o) in self.outcomes {
            op.admits(o, last)?;
            outcomes.push((Pattern::parse(&text)?, o));
        }
        if self.token
            && (op != Operation::Acquire || !outcomes.iter().any(|(_, o)| *o == Outcome::Granted))
        {
            return Err(
                "`token = true` goes on an acquire step that says which reply grants the lock"
                    .into(),
            );
        }
        Ok(Step {
            send,
            outcomes,
            at: self.at,
            token: self.token,
        })
    }
}

/// A command's words are one the spec runs, whatever the placeholders hold.
fn check_words(words: &[Template]) -> Result<(), String> {
    let Some((name, _)) = words.split_first() else {
        return Err(
            "`send` is empty: write a command, e.g. `SET {key} {token} NX PX {lease_ms}`".into(),
        );
    };
    let lower = name.0.to_ascii_lowercase();
    if matches!(lower.as_str(), "eval" | "evalsha") {
        return Err("send a script with `script = \"file.lua\"` (or `lua = \"…\"`), `keys` and `args`, not as EVAL words".into());
    }
    if NONDETERMINISTIC.contains(&lower.as_str()) {
        return Err(format!(
            "`{}` answers by the server's clock or by chance: a model cannot explore it",
            name.0
        ));
    }
    let f = Fill {
        key: "k",
        token: "t",
        lease_ms: 1,
        now_ms: 1,
        reply: "1",
    };
    let filled: Vec<String> = words[1..].iter().map(|w| w.fill(&f)).collect();
    if RedisCommand::from_words(&name.0, &filled).is_none() {
        let text: Vec<&str> = words.iter().map(|w| w.0.as_str()).collect();
        return Err(if SPEC_COMMANDS.contains(&lower.as_str()) {
            format!("`{}`: wrong arguments for {}", text.join(" "), name.0)
        } else {
            format!(
                "`{}` is no command of the Redis spec; it runs: {}",
                name.0,
                SPEC_COMMANDS.join(", ")
            )
        });
    }
    Ok(())
}

/// Every step that reads `{reply}` comes after one that keeps a reply: a step that can
/// answer `next` earlier in its acquire (for a release, also in the release before it;
/// for a renewal, in the acquire).
fn reply_is_kept(p: &RedisProtocol) -> Result<(), ProtocolError> {
    let goes_on = |steps: &[Step]| steps.iter().any(|s| s.can(Outcome::Next));
    let ops = [
        (Operation::Acquire, &p.acquire, false),
        (Operation::Release, &p.release, goes_on(&p.acquire)),
        (Operation::Renew, &p.renew, goes_on(&p.acquire)),
    ];
    for (op, steps, kept) in ops {
        for (k, step) in steps.iter().enumerate() {
            if step.uses_reply() && !kept && !goes_on(&steps[..k]) {
                return Err(ProtocolError::at(
                    &step.at,
                    format!(
                        "{} step {}: `{{reply}}` is the reply of the last step that went on (`next = …`), and no step before this one goes on",
                        op.key(),
                        k + 1
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Builds a [`RedisProtocol`]; [`RedisProtocolBuilder::build`] says what is wrong.
#[derive(Clone, Debug)]
pub struct RedisProtocolBuilder {
    protocol: RedisProtocol,
    pending: Vec<(Operation, StepBuilder)>,
}

impl RedisProtocolBuilder {
    /// What clients write as `{token}`.
    pub fn token(mut self, token: TokenKind) -> Self {
        self.protocol.token = token;
        self
    }

    /// Each client enters twice and leaves twice.
    pub fn reentrant(mut self, yes: bool) -> Self {
        self.protocol.reentrant = yes;
        self
    }

    /// What a refused client does.
    pub fn on_busy(mut self, on_busy: OnBusy) -> Self {
        self.protocol.on_busy = on_busy;
        self
    }

    /// A model's client tries at most `n` times (see [`RedisProtocol::attempts`]).
    pub fn attempts(mut self, n: u8) -> Self {
        self.protocol.attempts = Some(n.max(1));
        self
    }

    /// Adds an acquire step.
    pub fn acquire(mut self, step: StepBuilder) -> Self {
        self.pending.push((Operation::Acquire, step));
        self
    }

    /// Adds a release step.
    pub fn release(mut self, step: StepBuilder) -> Self {
        self.pending.push((Operation::Release, step));
        self
    }

    /// Adds a renew step.
    pub fn renew(mut self, step: StepBuilder) -> Self {
        self.pending.push((Operation::Renew, step));
        self
    }

    /// The protocol, or the first thing wrong with it (where a step was written, if
    /// known).
    pub fn build(self) -> Result<RedisProtocol, ProtocolError> {
        let mut p = self.protocol;
        for (op, n, last, step) in numbered(self.pending) {
            let at = step.at.clone();
            let built = step
                .build(op, last)
                .map_err(|m| ProtocolError::at(&at, format!("{} step {n}: {m}", op.key())))?;
            match op {
                Operation::Acquire => p.acquire.push(built),
                Operation::Release => p.release.push(built),
                Operation::Renew => p.renew.push(built),
            }
        }
        reply_is_kept(&p)?;
        if p.renew.len() > 1 {
            return Err(ProtocolError::at(
                &p.renew[1].at,
                "renew step 2: a renewal is one step (a script, where it must check and extend at once)".into(),
            ));
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
        if p.reentrant && (p.acquire.len() > 1 || p.release.len() > 1) {
            return Err(ProtocolError::at(
                &p.acquire[0].at,
                "a reentrant protocol re-enters with one acquire step and leaves with one release step".into(),
            ));
        }
        Ok(p)
    }
}
