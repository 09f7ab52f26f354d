//! No foreign release, proven from a history's Redis `command` events where the lock
//! operations alone cannot prove it.
//!
//! A release that checks ownership and deletes in two commands (`GET`, then `DEL`) can
//! delete a lock granted to someone else *while the release is under way*: the release
//! began before the other grant, so the order of lock operations proves nothing. The
//! commands do. On one server and one key:
//!
//! 1. client A's conditional set (`SET k … NX`, `SETNX k`) was granted and returned;
//! 2. then client B (another client) called its own conditional set, which was granted
//!    (so from some moment inside B's call, `k` held B's value);
//! 3. B's reply came before A called `DEL k`, and that `DEL` returned 1 (so `k` existed
//!    when the `DEL` took effect);
//! 4. no command of A's that may write `k` can have taken effect between the call of
//!    B's set and the reply to A's `DEL` (every such command's call-to-reply span, or
//!    call-to-forever for one without reply, lies outside that window).
//!
//! Whatever `k` held when A's `DEL` took effect was written after B's set took effect,
//! and not by A: A deleted a lock that was not its own. Sound as long as the events
//! record every command the clients sent to the server, which a run's recorders do
//! (see HISTORY.md). Refused conditional sets wrote nothing and do not count as writes;
//! a writing command the spec does not model counts as a write of every key of its
//! server.

use std::collections::BTreeMap;

use locklab_models::redis::spec::{RedisCommand, RedisReply, RedisSpec};

use crate::ops::Paired;

use super::one_redis::CommandOp;
use crate::check::report::{fmt_time, CheckReport, Property, Verdict};

/// A conditional set that the server granted.
fn granted_set(op: &CommandOp) -> bool {
    matches!(
        (&op.command, &op.reply),
        (RedisCommand::Set { nx: true, .. }, Some(RedisReply::Ok))
            | (RedisCommand::SetNx { .. }, Some(RedisReply::Integer(1)))
    )
}

/// Whether the command may have changed its key: every write but a refused conditional
/// set.
fn may_write(op: &CommandOp) -> bool {
    let refused = matches!(
        (&op.command, &op.reply),
        (RedisCommand::Set { nx: true, .. }, Some(RedisReply::Nil))
            | (RedisCommand::SetNx { .. }, Some(RedisReply::Integer(0)))
    );
    op.command.is_write() && !refused
}

/// The proof on one server and key: `(A's grant, B's grant, A's DEL)`.
fn prove<'a>(ops: &[&'a CommandOp]) -> Option<(&'a CommandOp, &'a CommandOp, &'a CommandOp)> {
    let dels = ops.iter().filter(|o| {
        matches!(o.command, RedisCommand::Del { .. }) && o.reply == Some(RedisReply::Integer(1))
    });
    for del in dels {
        let a = del.client;
        // B's grant: the latest-called one that returned before the DEL was called
        // gives the narrowest window, hence the best chance of a proof.
        let bs = ops
            .iter()
            .filter(|b| b.client != a && granted_set(b) && b.latest_effect() < del.call_ns);
        for b in bs.rev() {
            let a_grant = ops
                .iter()
                .rev()
                .find(|g| g.client == a && granted_set(g) && g.return_ns < b.call_ns);
            let Some(a_grant) = a_grant else { continue };
            let a_wrote = ops.iter().any(|w| {
                w.client == a
                    && w.line != del.line
                    && may_write(w)
                    && w.call_ns < del.return_ns
                    && w.latest_effect() > b.call_ns
            });
            if !a_wrote {
                return Some((a_grant, b, del));
            }
        }
    }
    None
}

/// The violation the command events prove, if any (`None` also for a history without
/// Redis command events).
pub fn check(paired: &Paired) -> Option<CheckReport> {
    // Only the commands that may have written take part in a proof (grants and
    // deletes among them): a long run's refused tries, most of its commands, are
    // not kept.
    let mut ops = Vec::new();
    crate::backend::each_command_event::<RedisSpec>(paired, |op| {
        if may_write(&op) {
            ops.push(op)
        }
    })
    .ok()?;
    ops.sort_by_key(|o| o.call_ns);
    let mut by_key: BTreeMap<(usize, &str), Vec<&CommandOp>> = BTreeMap::new();
    for op in &ops {
        if let Some(key) = op.command.key() {
            by_key.entry((op.node, key)).or_default().push(op);
        }
    }
    // A writing command the spec does not model (an external client's `HSET`, an
    // unknown script) may have written any key of its server: it stands in every key's
    // list there, where it can only take a proof away.
    for ((node, _), list) in by_key.iter_mut() {
        list.extend(
            ops.iter()
                .filter(|o| o.node == *node && !o.command.is_modelled() && o.command.is_write()),
        );
        list.sort_by_key(|o| o.call_ns);
    }
    // Each list is in call order.
    by_key.iter().find_map(|(&(_, key), list)| {
        let (ga, gb, del) = prove(list)?;
        let mut report = CheckReport::new(
            Property::NoForeignRelease,
            Verdict::Violation,
            format!(
                "c{a} deleted a lock that was not its own (proven from the Redis commands): c{a} was granted {key} at {}, c{b}'s SET NX on {key} was called after that and granted at {}, c{a} sent no write to {key} since, and c{a}'s DEL {key} called at {} removed a key",
                fmt_time(ga.return_ns),
                fmt_time(gb.return_ns),
                fmt_time(del.call_ns),
                a = del.client,
                b = gb.client,
            ),
        );
        report.ops = vec![
            ga.op_ref("its grant"),
            gb.op_ref("the next grant"),
            del.op_ref(&format!("its delete of c{}'s lock", gb.client)),
        ];
        Some(report)
    })
}
