//! Each backend's history vocabulary, in its own folder: what its `command` events are
//! (its family spec's commands and replies), how they read, what they prove that the
//! lock operations cannot (a foreign release), and what else they show (findings that
//! change no verdict). One `match` on the history header's [`Backend`] picks it; the
//! generic checks ([`crate::check`]) know no backend.

use crate::check::linear::Budget;
use crate::check::{CheckReport, Finding};
use crate::format::{Backend, CommandValue, History};
use crate::ops::Paired;

pub mod etcd;
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
/// servers behaved as one Redis; how many clients a ZooKeeper release wakes.
pub fn findings(history: &History, paired: &Paired, budget: &Budget) -> Vec<Finding> {
    match history.header.backend {
        Backend::Redis => redis::one_redis::check(history, paired, budget)
            .into_iter()
            .collect(),
        Backend::Zookeeper => zk::wakeups::check(history).into_iter().collect(),
        Backend::Mariadb
        | Backend::Postgres
        | Backend::Etcd
        | Backend::Imported
        | Backend::Simulated => Vec::new(),
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
