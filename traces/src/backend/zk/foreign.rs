//! No foreign release, proven from a history's ZooKeeper `command` events: a `delete`
//! that removed a lock node another client had created, with no create of that node by
//! the deleter in between.
//!
//! A client that releases by deleting a node it picked (the lowest child, a path it
//! remembered from before its session expired) may remove a node that is not its own,
//! however its lock operations look. The requests show it. On one path `p`:
//!
//! 1. client B (not A) created `p`: its `create` (or a `multi`'s) answered that it made
//!    exactly `p` (a sequential create's reply names the node with its sequence), so
//!    from some moment inside B's call `p` was a node of B's;
//! 2. B's reply came before A called its `delete` of `p` (alone or in a `multi`), which
//!    answered OK (so `p` existed when the delete took effect);
//! 3. no request of A's that may have created `p` can have taken effect between the
//!    call of B's create and the reply to A's delete: a create of `p` (or of a prefix of
//!    it, when sequential and unanswered), a `multi` with one, a writing request the spec
//!    does not model at `p` or above it, or anywhere when it names no path. A request
//!    without reply may take effect at any time after its call.
//!
//! Only a create makes a node, so the `p` A's delete removed was made by the last
//! create of `p` before it, which took effect at or after B's (B's own, or a later
//! one), and not by A: A deleted a node that was not its own. Deletes and session
//! expiries do not matter (they only remove), nor do other clients' creates (they are
//! not A's). Sound as long as the events record every request the clients sent, which
//! a run's recorders and the proxies hearing an external client do; the ensemble being
//! one linearizable tree is what ZooKeeper promises for writes.

use locklab_models::zk::spec::{ZkCommand, ZkReply, ZkSpec};

use crate::ops::Paired;

use crate::backend::{command_events, foreign_creation, CommandEvent};
use crate::check::report::{fmt_time, CheckReport, Property, Verdict};

/// One ZooKeeper request as a client saw it.
type Request = CommandEvent<ZkSpec>;

/// Whether a create of `path` (a prefix, when `sequential`) may have made `target`.
fn may_name(path: &str, sequential: bool, target: &str) -> bool {
    if sequential {
        target.starts_with(path)
    } else {
        path == target
    }
}

impl Request {
    /// The ops that ran and their replies: a `multi`'s ops when it succeeded (none
    /// when it failed), all of them without replies when its outcome is unknown; any
    /// other request alone.
    fn ran(&self) -> Vec<(&ZkCommand, Option<&ZkReply>)> {
        match (&self.command, &self.reply) {
            (ZkCommand::Multi { ops, .. }, Some(ZkReply::Multi(replies))) => ops
                .iter()
                .enumerate()
                .map(|(i, op)| (op, replies.get(i)))
                .collect(),
            (ZkCommand::Multi { .. }, Some(_)) => Vec::new(),
            (ZkCommand::Multi { ops, .. }, None) => ops.iter().map(|op| (op, None)).collect(),
            (cmd, reply) => vec![(cmd, reply.as_ref())],
        }
    }

    /// Whether it surely created `path`: a create answered with exactly that node.
    fn created(&self, path: &str) -> bool {
        self.ran().into_iter().any(|(op, reply)| {
            matches!(
                (op, reply),
                (ZkCommand::Create { .. }, Some(ZkReply::Created { path: made, .. }))
                    if made == path
            )
        })
    }

    /// Whether it may have created `path`. A create answered with another node, or
    /// with an error, made nothing at `path`; so did any request refused with an error.
    fn may_create(&self, path: &str) -> bool {
        if matches!(
            self.reply,
            Some(ZkReply::Error(_) | ZkReply::MultiFailed { .. })
        ) {
            return false;
        }
        self.ran().into_iter().any(|(op, reply)| match (op, reply) {
            (ZkCommand::Create { .. }, Some(ZkReply::Created { path: made, .. })) => made == path,
            (ZkCommand::Create { .. }, Some(ZkReply::Error(_))) => false,
            (
                ZkCommand::Create {
                    path: asked,
                    sequential,
                    ..
                },
                _,
            ) => may_name(asked, *sequential, path),
            (
                ZkCommand::Other {
                    write: true,
                    path: at,
                    ..
                },
                _,
            ) => at.as_deref().is_none_or(|at| path.starts_with(at)),
            _ => false,
        })
    }

    /// The paths it surely removed: deletes answered OK.
    fn removed(&self) -> Vec<&str> {
        self.ran()
            .into_iter()
            .filter_map(|(op, reply)| match (op, reply) {
                (ZkCommand::Delete { path, .. }, Some(ZkReply::Ok)) => Some(path.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// The violation the ZooKeeper requests prove, if any (`None` also for a history whose
/// `command` events are not ZooKeeper requests).
pub fn check(paired: &Paired) -> Option<CheckReport> {
    let reqs = command_events::<ZkSpec>(paired).ok()?;
    for del in &reqs {
        let a = del.client;
        for path in del.removed() {
            let created = |b: &Request| b.created(path);
            let Some(b) = foreign_creation(&reqs, del, created, |w| w.may_create(path)) else {
                continue;
            };
            let mut report = CheckReport::new(
                Property::NoForeignRelease,
                Verdict::Violation,
                format!(
                    "c{a} deleted a lock node that was not its own (proven from the ZooKeeper commands): c{b} created {path} (history line {}) at {}, c{a} sent nothing that could have created {path} since, and c{a}'s delete of {path} (history line {}), called at {}, removed it",
                    b.line,
                    fmt_time(b.return_ns),
                    del.line,
                    fmt_time(del.call_ns),
                    b = b.client,
                ),
            );
            report.ops = vec![
                b.op_ref(&format!("c{}'s create", b.client)),
                del.op_ref(&format!("its delete of c{}'s node", b.client)),
            ];
            return Some(report);
        }
    }
    None
}
