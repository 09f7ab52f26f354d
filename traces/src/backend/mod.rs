//! Each backend's history vocabulary, in its own folder: what its `command` events are
//! (its family spec's commands and replies), how they read, what they prove that the
//! lock operations cannot (a foreign release), and what else they show (findings that
//! change no verdict). One `match` on the history header's [`Backend`] picks it; the
//! generic checks ([`crate::check`]) know no backend.

use locklab_models::spec::Spec;
use serde::de::DeserializeOwned;

use crate::check::linear::Budget;
use crate::check::report::{CheckReport, Finding, OpRef};
use crate::format::{Backend, CommandValue, History, Phase};
use crate::ops::Paired;

pub mod etcd;
pub mod order;
pub mod redis;
pub mod sql;
pub mod zk;

/// A foreign release proven from the history's `command` events, if its backend's
/// requests prove one.
pub fn foreign_release(history: &History, paired: &Paired) -> Option<CheckReport> {
    match history.header.backend {
        Backend::Redis => redis::foreign::check(paired),
        Backend::Etcd => etcd::foreign::check(paired),
        Backend::Zookeeper => zk::foreign::check(paired),
        Backend::Mariadb | Backend::Postgres | Backend::Imported | Backend::Simulated => None,
    }
}

/// What else the history's `command` events show, outside the verdict: whether the
/// servers behaved as one Redis; how many clients a ZooKeeper release wakes; whether
/// ZooKeeper's and etcd's queues granted in request order ([`order`]).
pub fn findings(history: &History, paired: &Paired, budget: &Budget) -> Vec<Finding> {
    match history.header.backend {
        Backend::Redis => redis::one_redis::check(history, paired, budget)
            .into_iter()
            .collect(),
        Backend::Zookeeper => zk::wakeups::check(paired)
            .into_iter()
            .chain(order::check(&zk::requests(paired), paired, "czxid"))
            .collect(),
        Backend::Etcd => order::check(&etcd::requests(paired), paired, "create revision")
            .into_iter()
            .collect(),
        Backend::Mariadb | Backend::Postgres | Backend::Imported | Backend::Simulated => Vec::new(),
    }
}

/// A `command` event's command and reply as a person would type and read them, in its
/// backend's words (`None` for the reply: none came); `None` when the event is not a
/// command of that backend's vocabulary.
pub fn words(backend: Backend, c: &CommandValue) -> Option<(String, Option<String>)> {
    match backend {
        Backend::Redis => redis::words(c),
        Backend::Etcd => etcd::words(c),
        Backend::Zookeeper => zk::words(c),
        Backend::Mariadb | Backend::Postgres => sql::words(c),
        Backend::Imported | Backend::Simulated => None,
    }
}

/// The command and reply of `c` read as `C` and `R`, in the words `command` and
/// `reply` give them.
fn read<C: serde::de::DeserializeOwned, R: serde::de::DeserializeOwned>(
    c: &CommandValue,
    command: fn(&C) -> String,
    reply: fn(&R) -> String,
) -> Option<(String, Option<String>)> {
    let cmd = serde_json::from_value::<C>(c.command.clone()).ok()?;
    let answer = match &c.reply {
        Some(r) => Some(reply(&serde_json::from_value::<R>(r.clone()).ok()?)),
        None => None,
    };
    Some((command(&cmd), answer))
}

/// One `command` event read in its backend's spec `S`: what a client sent to which
/// server, and what came back.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandEvent<S: Spec> {
    /// The number of the client process that sent it (`c0` is 0); the nemesis sends none.
    pub client: u32,
    /// The server it went to (the event's `node`).
    pub node: usize,
    /// What was sent.
    pub command: S::Input,
    /// What came back (`None`: no reply, outcome unknown).
    pub reply: Option<S::Output>,
    /// When it was sent (ns).
    pub call_ns: u64,
    /// When its reply came (ns); ignored when there was none.
    pub return_ns: u64,
    /// Where it is: the history line, or a recorder's sequence number.
    pub line: usize,
}

impl<S: Spec> CommandEvent<S> {
    /// When its effect can have happened at the latest (never known without a reply).
    pub fn latest_effect(&self) -> u64 {
        match self.reply {
            Some(_) => self.return_ns,
            None => u64::MAX,
        }
    }

    /// The event named in a report, as playing `role` in it.
    pub fn op_ref(&self, role: &str) -> OpRef {
        OpRef {
            line: self.line,
            process: format!("c{}", self.client),
            description: format!(
                "{role}: {}",
                S::describe(&self.command, self.reply.as_ref())
            ),
        }
    }
}

/// The clients' `command` events of `paired`, read in spec `S`, in call order; where
/// one does not read so, its line and why.
pub fn command_events<S: Spec>(paired: &Paired) -> Result<Vec<CommandEvent<S>>, String>
where
    S::Input: DeserializeOwned,
    S::Output: DeserializeOwned,
{
    let mut out = Vec::new();
    each_command_event::<S>(paired, |c| out.push(c))?;
    out.sort_by_key(|o| o.call_ns);
    Ok(out)
}

/// Calls `f` with each of the clients' `command` events of `paired` read in spec `S`,
/// one at a time in file order (not call order: a command is written when its reply
/// comes); stops at the first that does not read so, with its line and why. The
/// checks that keep a few of a long run's million commands take them so.
pub fn each_command_event<S: Spec>(
    paired: &Paired,
    mut f: impl FnMut(CommandEvent<S>),
) -> Result<(), String>
where
    S::Input: DeserializeOwned,
    S::Output: DeserializeOwned,
{
    paired.each_command(|line, e| {
        let Some(client) = e.process.client() else {
            return Ok(());
        };
        let v = e
            .value
            .as_ref()
            .ok_or_else(|| "no value".to_string())
            .and_then(|v| v.parse::<CommandValue>().map_err(|x| x.to_string()))
            .map_err(|why| format!("line {line}: {why}"))?;
        let command = serde_json::from_value::<S::Input>(v.command)
            .map_err(|x| format!("line {line}: not a command of this backend: {x}"))?;
        let reply = match (e.phase, v.reply) {
            (Phase::Info, _) | (_, None) => None,
            (_, Some(r)) => Some(
                serde_json::from_value::<S::Output>(r)
                    .map_err(|x| format!("line {line}: not a reply of this backend: {x}"))?,
            ),
        };
        f(CommandEvent {
            client,
            node: v.node,
            command,
            reply,
            call_ns: e.time,
            return_ns: v.return_time,
            line,
        });
        Ok(())
    })
}

/// The creation that `del` (a delete that removed something) removed, proven not the
/// deleter's own: an event of another client that `created` the object and answered
/// before `del` was called, with no event of the deleter's that `may_write` the object
/// and may have taken effect between that creation's call and `del`'s reply (one without
/// a reply may take effect any time after its call). The latest-called such creation
/// gives the narrowest window. Sound as long as the events are every request the clients
/// sent.
pub fn foreign_creation<'a, S: Spec>(
    events: &'a [CommandEvent<S>],
    del: &CommandEvent<S>,
    created: impl Fn(&CommandEvent<S>) -> bool,
    may_write: impl Fn(&CommandEvent<S>) -> bool,
) -> Option<&'a CommandEvent<S>> {
    let a = del.client;
    events.iter().rev().find(|b| {
        b.client != a
            && created(b)
            && b.latest_effect() < del.call_ns
            && !events.iter().any(|w| {
                w.client == a
                    && w.line != del.line
                    && may_write(w)
                    && w.call_ns < del.return_ns
                    && w.latest_effect() > b.call_ns
            })
    })
}
