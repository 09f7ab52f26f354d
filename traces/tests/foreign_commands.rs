//! No foreign release proven from Redis command events: a get-then-del release whose
//! `DEL` removed the next holder's lock is flagged, though its lock operations alone
//! prove nothing (the release began before the other grant); near misses are not.

use crate::common::build::Build;
use locklab_traces::check::Verdict;
use locklab_traces::format::{Backend, OpKind, Phase};
use serde_json::{json, Value};

const LEASE_MS: u64 = 100;

/// A history of the get-then-del row, every event on one key `lock`.
fn redis() -> Build {
    Build::of("redis-get-then-del", Backend::Redis)
        .every_event_on("lock")
        .leases(LEASE_MS)
}

/// The Redis commands of a lock on key `lock`.
trait Commands: Sized {
    /// `SET lock <owner> NX PX 100` over `[from, to]`.
    fn set_nx(self, p: u32, owner: &str, from: u64, to: u64, reply: Option<Value>) -> Self;
    fn get(self, p: u32, from: u64, to: u64, value: &str) -> Self;
    fn del(self, p: u32, from: u64, to: u64, removed: i64) -> Self;
}

impl Commands for Build {
    fn set_nx(self, p: u32, owner: &str, from: u64, to: u64, reply: Option<Value>) -> Self {
        let set = json!({"set": {"key": "lock", "value": owner, "nx": true, "px": LEASE_MS}});
        self.cmd(p, set, from, to, reply)
    }

    fn get(self, p: u32, from: u64, to: u64, value: &str) -> Self {
        let get = json!({"get": {"key": "lock"}});
        self.cmd(p, get, from, to, Some(json!({ "bulk": value })))
    }

    fn del(self, p: u32, from: u64, to: u64, removed: i64) -> Self {
        let del = json!({"del": {"key": "lock"}});
        self.cmd(p, del, from, to, Some(json!({ "integer": removed })))
    }
}

fn ok() -> Option<Value> {
    Some(json!("ok"))
}

/// c0 is granted (0–1 ms, lease 100 ms) and starts its release at 50 ms: its `GET`
/// reads its own value, then it pauses. Its lease runs out, c1 is granted at 150 ms,
/// and c0's `DEL` at 200 ms removes c1's lock. `between` adds events before the DEL.
fn get_then_del(between: impl FnOnce(Build) -> Build, del_reply: i64) -> Build {
    let b = redis()
        .op(0, OpKind::Acquire, 0, 1)
        .set_nx(0, "a", 0, 1, ok())
        .ev(0, OpKind::Release, Phase::Invoke, 50, |_| {})
        .get(0, 50, 51, "a")
        .op(1, OpKind::Acquire, 150, 151)
        .set_nx(1, "b", 150, 151, ok());
    between(b)
        .del(0, 200, 201, del_reply)
        .ev(0, OpKind::Release, Phase::Ok, 201, |_| {})
}

#[test]
fn a_del_that_removed_the_next_holders_lock_is_a_foreign_release() {
    let report = get_then_del(|b| b, 1).foreign();
    assert_eq!(report.verdict, Verdict::Violation, "{report:#?}");
    assert!(
        report.summary.contains("proven from the Redis commands"),
        "{}",
        report.summary
    );
    let who: Vec<&str> = report.ops.iter().map(|o| o.process.as_str()).collect();
    assert_eq!(who, ["c0", "c1", "c0"]);
    assert!(report.ops[2].description.contains("DEL"), "{report:#?}");
}

#[test]
fn the_lock_operations_alone_prove_nothing_here() {
    // The same run without command events: the release began before c1's grant.
    let mut b = get_then_del(|b| b, 1);
    b.history.events.retain(|(_, e)| e.op != OpKind::Command);
    assert_eq!(b.foreign().verdict, Verdict::Ok);
}

#[test]
fn a_del_that_found_nothing_proves_nothing() {
    assert_eq!(get_then_del(|b| b, 0).foreign().verdict, Verdict::Ok);
}

#[test]
fn overlapping_windows_prove_nothing() {
    // c1's SET was called before c0's grant returned: either may have come first.
    let early = redis()
        .op(0, OpKind::Acquire, 0, 10)
        .set_nx(0, "a", 0, 10, ok())
        .op(1, OpKind::Acquire, 5, 151)
        .set_nx(1, "b", 5, 151, ok())
        .op(0, OpKind::Release, 200, 201)
        .del(0, 200, 201, 1);
    assert_eq!(early.foreign().verdict, Verdict::Ok);
    // c1's reply came after c0's DEL was called: the DEL may have come first.
    let late = redis()
        .op(0, OpKind::Acquire, 0, 1)
        .set_nx(0, "a", 0, 1, ok())
        .ev(0, OpKind::Release, Phase::Invoke, 50, |_| {})
        .get(0, 50, 51, "a")
        .op(1, OpKind::Acquire, 150, 205)
        .set_nx(1, "b", 150, 205, ok())
        .del(0, 200, 201, 1)
        .ev(0, OpKind::Release, Phase::Ok, 201, |_| {});
    assert_eq!(late.foreign().verdict, Verdict::Ok);
}

#[test]
fn a_holder_that_set_the_key_again_deletes_its_own() {
    // c1's key expired at 251 ms; c0 set it again at 260 ms and deleted that at 300.
    let again = redis()
        .op(0, OpKind::Acquire, 0, 1)
        .set_nx(0, "a", 0, 1, ok())
        .op(1, OpKind::Acquire, 150, 151)
        .set_nx(1, "b", 150, 151, ok())
        .op(0, OpKind::Acquire, 260, 261)
        .set_nx(0, "a", 260, 261, ok())
        .op(0, OpKind::Release, 300, 301)
        .del(0, 300, 301, 1);
    assert_eq!(again.foreign().verdict, Verdict::Ok);
    // A SET of c0's that got no reply may take effect at any time after its call.
    let unknown = get_then_del(|b| b.set_nx(0, "a", 120, 400, None), 1);
    assert_eq!(unknown.foreign().verdict, Verdict::Ok);
    // A refused one wrote nothing: the proof stands.
    let refused = get_then_del(|b| b.set_nx(0, "a", 160, 161, Some(json!("nil"))), 1);
    assert_eq!(refused.foreign().verdict, Verdict::Violation);
}

/// A command the spec does not model may have written the lock (an external client's
/// `HSET`, an unknown script): once c0 sent one in the window, its `DEL` proves
/// nothing; one that only reads, or another client's, takes nothing away.
#[test]
fn an_unmodelled_write_in_the_window_takes_the_proof_away() {
    let other = |write: bool| json!({"other": {"name": "EVALSHA", "args": ["ab12", "1", "lock", "a"], "write": write}});
    let opaque = get_then_del(|b| b.cmd(0, other(true), 160, 161, ok()), 1);
    assert_eq!(
        opaque.foreign().verdict,
        Verdict::Ok,
        "{:#?}",
        opaque.foreign()
    );
    let read = get_then_del(|b| b.cmd(0, other(false), 160, 161, ok()), 1);
    assert_eq!(read.foreign().verdict, Verdict::Violation);
    let theirs = get_then_del(|b| b.cmd(1, other(true), 160, 161, ok()), 1);
    assert_eq!(theirs.foreign().verdict, Verdict::Violation);
}
