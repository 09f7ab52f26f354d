//! No foreign release proven from ZooKeeper command events: a release that deletes the
//! lowest node under the lock path, whoever made it, removes the next holder's node
//! after its own went with its expired session; the requests prove it, the near misses
//! (a delete that found nothing, overlapping windows, a create of the deleter's that
//! may have made the node, its own node) prove nothing, and a recipe that deletes only
//! its own nodes is fine.

use crate::common::build::{session, Build};
use locklab_traces::check::{check_history, Options, Property, Verdict};
use locklab_traces::format::{Backend, OpKind, Phase};
use serde_json::{json, Value};

/// A history of the ZooKeeper recipe's row, each request naming its client's session.
fn zk() -> Build {
    Build::of("zk-sequential-pause", Backend::Zookeeper).with_sessions()
}

/// The requests of the recipe's lock nodes under `/lock`.
trait Nodes: Sized {
    /// An ephemeral sequential create of `/lock/n-` that made `/lock/n-<seq>`.
    fn create(self, p: u32, from: u64, to: u64, made: Option<u32>) -> Self;
    /// A delete of `/lock/n-<seq>` answered `reply`.
    fn delete(self, p: u32, seq: u32, from: u64, to: u64, reply: Value) -> Self;
}

impl Nodes for Build {
    fn create(self, p: u32, from: u64, to: u64, made: Option<u32>) -> Self {
        let command = json!({"create": {"session": session(p), "path": "/lock/n-", "data": format!("c{p}"), "ephemeral": true, "sequential": true}});
        let reply = made.map(|seq| {
            json!({"created": {"path": format!("/lock/n-{seq:010}"), "czxid": 100 + u64::from(seq)}})
        });
        self.cmd(p, command, from, to, reply)
    }

    fn delete(self, p: u32, seq: u32, from: u64, to: u64, reply: Value) -> Self {
        self.cmd(p, delete_command(p, seq), from, to, Some(reply))
    }
}

fn delete_command(p: u32, seq: u32) -> Value {
    json!({"delete": {"session": session(p), "path": format!("/lock/n-{seq:010}"), "version": null}})
}

fn ok() -> Value {
    json!("ok")
}

/// c0 holds `/lock/n-0000000000` from 1 ms, then stops; its session expires with its
/// node, c1's create makes `/lock/n-0000000001` at 150 ms and c1 holds. c0 comes back
/// and releases at 200 ms by deleting the lowest child: c1's. `between` adds events
/// before the delete.
fn delete_lowest(between: impl FnOnce(Build) -> Build, delete_reply: Value) -> Build {
    let b = zk()
        .op(0, OpKind::Acquire, 0, 1)
        .create(0, 0, 1, Some(0))
        .op(1, OpKind::Acquire, 150, 151)
        .create(1, 150, 151, Some(1))
        .ev(0, OpKind::Release, Phase::Invoke, 200, |_| {})
        .cmd(
            0,
            json!({"get-children": {"session": session(0), "path": "/lock", "watch": false}}),
            200,
            201,
            Some(json!({"children": ["n-0000000001"]})),
        );
    between(b)
        .delete(0, 1, 202, 203, delete_reply)
        .ev(0, OpKind::Release, Phase::Ok, 203, |_| {})
}

#[test]
fn a_delete_of_another_clients_node_is_a_foreign_release() {
    let b = delete_lowest(|b| b, ok());
    let report = b.foreign();
    assert_eq!(report.verdict, Verdict::Violation, "{report:#?}");
    assert!(
        report
            .summary
            .contains("proven from the ZooKeeper commands"),
        "{}",
        report.summary
    );
    let delete_line = b
        .history
        .events
        .iter()
        .find(|(_, e)| {
            e.op == OpKind::Command
                && e.value_json()
                    .is_some_and(|v| v["command"]["delete"].is_object())
        })
        .map(|(l, _)| *l)
        .expect("the delete");
    assert!(
        report.summary.contains(&format!(
            "delete of /lock/n-0000000001 (history line {delete_line})"
        )),
        "{}",
        report.summary
    );
    let who: Vec<&str> = report.ops.iter().map(|o| o.process.as_str()).collect();
    assert_eq!(who, ["c1", "c0"]);
    assert_eq!(report.ops[1].line, delete_line);
    assert!(
        report.ops[1]
            .description
            .contains("delete /lock/n-0000000001"),
        "{report:#?}"
    );
}

#[test]
fn the_lock_operations_alone_prove_nothing_here() {
    let mut b = delete_lowest(|b| b, ok());
    b.history.events.retain(|(_, e)| e.op != OpKind::Command);
    assert_eq!(b.foreign().verdict, Verdict::Ok);
}

#[test]
fn a_delete_that_found_nothing_proves_nothing() {
    let b = delete_lowest(|b| b, json!({"error": "no-node"}));
    assert_eq!(b.foreign().verdict, Verdict::Ok);
}

#[test]
fn overlapping_windows_prove_nothing() {
    // c1's create answered after c0's delete was called: the delete may have taken
    // effect first, on a node made at that path before c1's.
    let late = zk()
        .op(0, OpKind::Acquire, 0, 1)
        .create(0, 0, 1, Some(0))
        .op(1, OpKind::Acquire, 150, 210)
        .create(1, 150, 210, Some(1))
        .op(0, OpKind::Release, 202, 203)
        .delete(0, 1, 202, 203, ok());
    assert_eq!(late.foreign().verdict, Verdict::Ok);
}

#[test]
fn a_create_of_the_deleters_that_may_have_made_the_node_takes_the_proof_away() {
    // A sequential create of c0's without reply, called in the window: its node may be
    // the one deleted.
    let unknown = delete_lowest(|b| b.create(0, 160, 170, None), ok());
    assert_eq!(unknown.foreign().verdict, Verdict::Ok);
    // Called after the delete returned: it cannot be.
    let after = delete_lowest(|b| b, ok()).create(0, 300, 301, None);
    assert_eq!(after.foreign().verdict, Verdict::Violation);
    // One that made another node, or failed, made not this one.
    let other = delete_lowest(|b| b.create(0, 160, 161, Some(2)), ok());
    assert_eq!(other.foreign().verdict, Verdict::Violation);
    let refused = delete_lowest(
        |b| {
            b.cmd(
                0,
                json!({"create": {"session": session(0), "path": "/lock/n-", "data": "", "ephemeral": true, "sequential": true}}),
                160,
                161,
                Some(json!({"error": "session-expired"})),
            )
        },
        ok(),
    );
    assert_eq!(refused.foreign().verdict, Verdict::Violation);
}

/// A request the spec does not model that may write (an unfollowable connection's
/// unknown write, with no path) may have made any node: once c0 sent one in the
/// window, its delete proves nothing; one that only reads, one elsewhere, or another
/// client's, takes nothing away.
#[test]
fn an_unmodelled_write_in_the_window_takes_the_proof_away() {
    let other = |path: Option<&str>, write: bool| json!({"other": {"name": "createTTL", "path": path, "write": write}});
    let opaque = delete_lowest(|b| b.cmd(0, other(None, true), 160, 161, Some(ok())), ok());
    assert_eq!(
        opaque.foreign().verdict,
        Verdict::Ok,
        "{:#?}",
        opaque.foreign()
    );
    let above = delete_lowest(
        |b| b.cmd(0, other(Some("/lock/n-"), true), 160, 161, None),
        ok(),
    );
    assert_eq!(above.foreign().verdict, Verdict::Ok);
    let elsewhere = delete_lowest(|b| b.cmd(0, other(Some("/x"), true), 160, 161, None), ok());
    assert_eq!(elsewhere.foreign().verdict, Verdict::Violation);
    let read = delete_lowest(|b| b.cmd(0, other(None, false), 160, 161, Some(ok())), ok());
    assert_eq!(read.foreign().verdict, Verdict::Violation);
    let theirs = delete_lowest(|b| b.cmd(1, other(None, true), 160, 161, Some(ok())), ok());
    assert_eq!(theirs.foreign().verdict, Verdict::Violation);
}

#[test]
fn a_delete_inside_a_multi_counts_and_a_failed_multi_deleted_nothing() {
    let multi = |p: u32| {
        json!({"multi": {"session": session(p), "ops": [
            {"check": {"path": "/lock/n-0000000001", "version": 0}},
            delete_command(p, 1),
        ]}})
    };
    let done = zk()
        .op(1, OpKind::Acquire, 150, 151)
        .create(1, 150, 151, Some(1))
        .op(0, OpKind::Release, 202, 203)
        .cmd(0, multi(0), 202, 203, Some(json!({"multi": ["ok", "ok"]})));
    assert_eq!(done.foreign().verdict, Verdict::Violation);
    let failed = zk()
        .op(1, OpKind::Acquire, 150, 151)
        .create(1, 150, 151, Some(1))
        .op(0, OpKind::Release, 202, 203)
        .cmd(
            0,
            multi(0),
            202,
            203,
            Some(json!({"multi-failed": {"index": 0, "error": "bad-version"}})),
        );
    assert_eq!(failed.foreign().verdict, Verdict::Ok);
}

/// The recipe as locklab's own clients run it: each deletes its own node, which it
/// created in its own session; every request of the history reads as ZooKeeper's.
#[test]
fn a_recipe_that_deletes_its_own_nodes_is_fine() {
    let h = zk()
        .cmd(
            0,
            json!({"connect": {"timeout": 2000}}),
            0,
            1,
            Some(json!({"connected": {"session": session(0)}})),
        )
        .op(0, OpKind::Acquire, 2, 4)
        .create(0, 2, 3, Some(0))
        .op(1, OpKind::Acquire, 5, 8)
        .create(1, 5, 6, Some(1))
        .cmd(
            1,
            json!({"exists": {"session": session(1), "path": "/lock/n-0000000000", "watch": true}}),
            6,
            7,
            Some(json!({"stat": {"data": "", "czxid": 100, "mzxid": 100, "version": 0, "ephemeral-owner": session(0)}})),
        )
        .op(0, OpKind::Release, 20, 22)
        .delete(0, 0, 20, 21, ok())
        .cmd(
            1,
            json!({"consume": {"session": session(1)}}),
            8,
            22,
            Some(json!({"notified": [{"session": session(1), "path": "/lock/n-0000000000", "kind": "node"}]})),
        )
        .op(1, OpKind::Acquire, 23, 25)
        .op(1, OpKind::Release, 30, 32)
        .delete(1, 1, 30, 31, ok());
    let report = check_history(&h.history, &Options::default()).expect("checks");
    let foreign = report
        .checks
        .iter()
        .find(|c| c.property == Property::NoForeignRelease)
        .expect("a foreign-release check");
    assert_eq!(foreign.verdict, Verdict::Ok, "{foreign:#?}");
    assert!(
        report.findings.iter().any(|f| f.name == "watch wake-ups"),
        "{:#?}",
        report.findings
    );
}
