//! How many clients a ZooKeeper lock wakes per release, from a history's `command`
//! events: each watch notification a client waited for and read is a `Consume` with the
//! notification in its reply, each release a `delete` of a node under `/lock` that
//! answered OK. The ephemeral-sequential recipe's waiter watches its predecessor, so a
//! release wakes one client; a waiter that watches `/lock`'s children wakes at every
//! change of them, so every release wakes every waiter (and so does every client that
//! joins the queue): the herd. A count, no property of the lock, so a [`Finding`] that
//! changes no verdict.

use locklab_models::zk::spec::{ZkCommand, ZkReply, LOCK_DIR};

use crate::format::{CommandValue, Phase};
use crate::ops::Paired;

use crate::check::report::{Finding, Verdict};

/// The name of the finding.
pub const NAME: &str = "watch wake-ups";

/// The counts for a ZooKeeper history, or `None` without releases.
pub fn check(paired: &Paired) -> Option<Finding> {
    let mut wakeups = 0u64;
    let mut woken_clients = std::collections::BTreeSet::new();
    let mut releases = 0u64;
    let read = paired.each_command(|_, e| {
        if e.phase != Phase::Ok {
            return Ok(());
        }
        let Some(v) = e
            .value
            .as_ref()
            .and_then(|v| v.parse::<CommandValue>().ok())
        else {
            return Ok(());
        };
        let command = serde_json::from_value::<ZkCommand>(v.command).ok();
        let reply = v
            .reply
            .and_then(|r| serde_json::from_value::<ZkReply>(r).ok());
        match (command, reply) {
            (Some(ZkCommand::Consume { .. }), Some(ZkReply::Notified(n))) => {
                wakeups += n.len() as u64;
                woken_clients.insert(e.process.to_string());
            }
            (Some(ZkCommand::Delete { path, .. }), Some(ZkReply::Ok))
                if path.starts_with(&format!("{LOCK_DIR}/")) =>
            {
                releases += 1;
            }
            _ => {}
        }
        Ok(())
    });
    if let Err(why) = read {
        return Some(Finding::new(NAME, Verdict::Unknown, why));
    }
    if releases == 0 {
        return None;
    }
    let per = wakeups as f64 / releases as f64;
    let summary = format!(
        "{per:.1} watch notifications per release ({wakeups} over {releases} releases, {} clients woken at least once)",
        woken_clients.len()
    );
    Some(
        Finding::new(NAME, Verdict::Ok, summary)
            .stat("wakeups", wakeups)
            .stat("releases", releases)
            .stat("per_release", (per * 100.0).round() / 100.0)
            .stat("clients_woken", woken_clients.len()),
    )
}
