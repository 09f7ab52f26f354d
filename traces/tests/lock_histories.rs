//! Hand-written lock histories and the verdicts the checkers must reach.

use crate::common::build::{check_of, Build, MS};
use locklab_traces::check::{CheckReport, Property, Report, Verdict};
use locklab_traces::format::{OpKind, Phase, ResourceSpec};

/// The report's `p` check reached `v`; `why` says what the case shows.
fn expect(report: &Report, p: Property, v: Verdict, why: &str) {
    assert_eq!(check_of(report, p).verdict, v, "{why}\n{report:#?}");
}

/// The report's `p` check found a violation, which its summary names with `says`.
fn violation<'r>(report: &'r Report, p: Property, says: &str) -> &'r CheckReport {
    let c = check_of(report, p);
    assert_eq!(c.verdict, Verdict::Violation, "{c:#?}");
    assert!(c.summary.contains(says), "{}", c.summary);
    c
}

#[test]
fn double_grant_is_a_violation() {
    let r = Build::new()
        .acquire(0, 0, 1, 10_000, Some(1))
        .acquire(1, 2, 3, 10_000, Some(2))
        .check();
    assert_eq!(r.verdict, Verdict::Violation);
    let lock = violation(&r, Property::LockLinearizability, "double grant");
    assert_eq!(lock.ops.first().map(|o| o.process.as_str()), Some("c1"));
    // The derived critical sections overlap too (both still hold at their last event).
    expect(
        &r,
        Property::MutualExclusion,
        Verdict::Ok,
        "sections are zero-length without later events",
    );
}

#[test]
fn grant_after_the_previous_lease_expired_is_fine() {
    let r = Build::new()
        .acquire(0, 0, 1, 100, Some(1))
        .acquire(1, 200, 201, 100, Some(2))
        .check();
    expect(&r, Property::LockLinearizability, Verdict::Ok, "");
}

#[test]
fn grant_while_the_lease_may_still_run_is_a_violation_only_if_certain() {
    // The lease of 100 ms started between 0 and 50 ms, so it ran until at least 100 ms:
    // a grant returning at 90 ms certainly happened while it ran.
    let r = Build::new()
        .acquire(0, 0, 50, 100, None)
        .acquire(1, 60, 90, 100, None)
        .check();
    expect(&r, Property::LockLinearizability, Verdict::Violation, "");
    // Returning at 101 ms it may have been granted at 101 ms, after an expiry at 100 ms.
    let r = Build::new()
        .acquire(0, 0, 50, 100, None)
        .acquire(1, 60, 101, 100, None)
        .check();
    expect(&r, Property::LockLinearizability, Verdict::Ok, "");
}

#[test]
fn release_by_a_non_owner_is_a_violation() {
    let r = Build::new()
        .acquire(0, 0, 1, 10_000, None)
        .release(1, 5, 6, Phase::Ok)
        .check();
    violation(&r, Property::LockLinearizability, "non-owner");
}

#[test]
fn refused_release_by_a_non_owner_is_fine() {
    let r = Build::new()
        .acquire(0, 0, 1, 10_000, None)
        .release(1, 5, 6, Phase::Fail)
        .release(0, 7, 8, Phase::Ok)
        .check();
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

#[test]
fn stale_fenced_write_accepted_is_a_violation() {
    let r = Build::new()
        .acquire(0, 0, 1, 10, Some(1))
        .acquire(1, 20, 21, 10, Some(2))
        .write(1, 22, 23, 5, Some(2))
        .write(0, 24, 25, 6, Some(1))
        .check();
    violation(&r, Property::Fencing, "stale token");
    expect(&r, Property::LockLinearizability, Verdict::Ok, "");
}

#[test]
fn fenced_writes_in_token_order_are_fine() {
    let r = Build::new()
        .write(0, 1, 2, 1, Some(1))
        .write(1, 3, 4, 2, Some(2))
        .check();
    expect(&r, Property::Fencing, Verdict::Ok, "");
}

#[test]
fn crashed_acquire_with_unknown_outcome_fits_either_way() {
    // It did not take effect: c1 is granted later.
    let r = Build::new()
        .acquire_ended(0, 0, 5, 10_000, Phase::Info)
        .acquire(1, 10, 11, 10_000, None)
        .check();
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
    // It did take effect: c1 is refused.
    let r = Build::new()
        .acquire_ended(0, 0, 5, 10_000, Phase::Info)
        .acquire_ended(1, 10, 11, 10_000, Phase::Fail)
        .check();
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
    // Never completed at all: same.
    let r = Build::new()
        .acquire_invoked(0, 0, 10_000)
        .acquire(1, 10, 11, 10_000, None)
        .check();
    assert_eq!(r.verdict, Verdict::Ok, "{r:#?}");
}

#[test]
fn overlapping_critical_sections_are_a_mutual_exclusion_violation() {
    let r = Build::new()
        .mark(0, OpKind::Enter, 10, Phase::Ok)
        .mark(1, OpKind::Enter, 20, Phase::Ok)
        .mark(0, OpKind::Leave, 30, Phase::Ok)
        .mark(1, OpKind::Leave, 40, Phase::Ok)
        .check();
    let m = violation(&r, Property::MutualExclusion, "c0 and c1");
    assert!(m.summary.contains("10.000 ms"), "{}", m.summary);
}

#[test]
fn a_rolled_back_section_excludes_no_one_and_counts_for_no_overlap() {
    // c0's session was killed mid-section: its `leave` fails (the transaction rolled
    // back), so c1's section inside c0's is no overlap; the same with a plain `leave` is.
    let void = |phase| {
        Build::new()
            .mark(0, OpKind::Enter, 10, Phase::Ok)
            .mark(1, OpKind::Enter, 20, Phase::Ok)
            .mark(1, OpKind::Leave, 30, Phase::Ok)
            .mark(0, OpKind::Leave, 40, phase)
            .check()
    };
    let m = void(Phase::Fail);
    expect(&m, Property::MutualExclusion, Verdict::Ok, "");
    assert!(check_of(&m, Property::MutualExclusion)
        .summary
        .contains("1 critical sections"));
    expect(
        &void(Phase::Ok),
        Property::MutualExclusion,
        Verdict::Violation,
        "",
    );
}

#[test]
fn back_to_back_critical_sections_are_fine() {
    let r = Build::new()
        .mark(0, OpKind::Enter, 10, Phase::Ok)
        .mark(0, OpKind::Leave, 20, Phase::Ok)
        .mark(1, OpKind::Enter, 20, Phase::Ok)
        .mark(1, OpKind::Leave, 30, Phase::Ok)
        .check();
    assert_eq!(r.verdict, Verdict::Ok);
}

#[test]
fn reentrant_lock_counts_holds() {
    let mut b = Build::new();
    b.history.header.reentrant = true;
    let r = b
        .acquire(0, 0, 1, 10_000, Some(1))
        .acquire(0, 2, 3, 10_000, Some(1))
        .release(0, 4, 5, Phase::Ok)
        .acquire(1, 6, 7, 10_000, None)
        .check();
    expect(
        &r,
        Property::LockLinearizability,
        Verdict::Violation,
        "still held once",
    );
}

#[test]
fn decreasing_grant_tokens_are_a_violation() {
    let r = Build::new()
        .acquire(0, 0, 1, 5, Some(7))
        .acquire(1, 20, 21, 5, Some(3))
        .check();
    violation(&r, Property::LockLinearizability, "token 3");
}

#[test]
fn oversold_inventory_is_counted() {
    let mut b = Build::new();
    b.history.header.resource = Some(ResourceSpec::Inventory {
        initial: 1,
        writes_are_updates: true,
    });
    // Both read 1, both write 0: two sales from a stock of one, one update lost.
    let r = b
        .ev(0, OpKind::Read, Phase::Invoke, 0, |_| {})
        .ev(1, OpKind::Read, Phase::Invoke, 0, |_| {})
        .ev(0, OpKind::Read, Phase::Ok, 1, |e| e.value = Some(1.into()))
        .ev(1, OpKind::Read, Phase::Ok, 1, |e| e.value = Some(1.into()))
        .ev(0, OpKind::Write, Phase::Invoke, 2, |e| {
            e.value = Some(0.into())
        })
        .ev(1, OpKind::Write, Phase::Invoke, 2, |e| {
            e.value = Some(0.into())
        })
        .ev(0, OpKind::Write, Phase::Ok, 3, |_| {})
        .ev(1, OpKind::Write, Phase::Ok, 3, |_| {})
        .read(0, 4, 5, Some(0))
        .check();
    expect(
        &r,
        Property::ResourceLinearizability,
        Verdict::Ok,
        "each op is atomic",
    );
    let safety = check_of(&r, Property::ResourceSafety);
    assert_eq!(safety.verdict, Verdict::Violation);
    assert_eq!(safety.stats.get("oversold"), Some(&1.into()));
    assert_eq!(safety.stats.get("lost_updates"), Some(&1.into()));
}

/// A release that succeeds after the client's lease surely ran out and another client
/// was granted the lock removed someone else's lock: a proven foreign release.
#[test]
fn release_after_expiry_and_a_new_grant_is_a_foreign_release() {
    let r = Build::new()
        .acquire(0, 0, 1, 100, None)
        .acquire(1, 150, 151, 100, None)
        .release(0, 200, 201, Phase::Ok)
        .check();
    let foreign = violation(
        &r,
        Property::NoForeignRelease,
        "c0 released a lock it no longer held",
    );
    let who: Vec<&str> = foreign.ops.iter().map(|o| o.process.as_str()).collect();
    assert_eq!(who, ["c0", "c1", "c0"]);
}

/// The same order proves nothing when the second grant overlapped a live lease (a
/// double grant — the lock check's finding), or when the release failed.
#[test]
fn no_foreign_release_without_proof() {
    let double_grant = Build::new()
        .acquire(0, 0, 1, 10_000, None)
        .acquire(1, 150, 151, 10_000, None)
        .release(0, 200, 201, Phase::Ok)
        .check();
    expect(&double_grant, Property::NoForeignRelease, Verdict::Ok, "");
    expect(
        &double_grant,
        Property::LockLinearizability,
        Verdict::Violation,
        "",
    );
    let refused = Build::new()
        .acquire(0, 0, 1, 100, None)
        .acquire(1, 150, 151, 100, None)
        .release(0, 200, 201, Phase::Fail)
        .release(1, 210, 211, Phase::Ok)
        .check();
    expect(&refused, Property::NoForeignRelease, Verdict::Ok, "");
}

/// Lost updates are shown by the writes that started from the same read (not every
/// update), and the timeline of the violation marks them.
#[test]
fn lost_updates_name_the_clashing_writes_and_the_timeline_marks_them() {
    let mut b = Build::new();
    b.history.header.resource = Some(ResourceSpec::Counter { initial: 0 });
    let b = b
        // c2: a clean update 0 -> 1 (lines 2–5).
        .read(2, 0, 1, None)
        .write(2, 2, 3, 1, None)
        // c0 and c1 both read 1 and write 2 (writes on lines 10 and 12).
        .read(0, 10, 11, Some(1))
        .read(1, 12, 13, Some(1))
        .write(1, 14, 15, 2, None)
        .write(0, 16, 17, 2, None)
        .read(3, 20, 21, Some(2));
    let r = b.check();
    let safety = check_of(&r, Property::ResourceSafety);
    assert_eq!(safety.verdict, Verdict::Violation);
    assert_eq!(safety.stats.get("lost_updates"), Some(&1.into()));
    let lines: Vec<usize> = safety.ops.iter().map(|o| o.line).collect();
    assert_eq!(lines, [10, 12], "the two writes over the same read of 1");
    assert!(safety
        .explanation
        .iter()
        .any(|l| l.contains("same read of 1")));
    let timeline = locklab_traces::timeline::offending_window(&b.history, &r)
        .expect("a violation has a timeline");
    let marked: Vec<&String> = timeline.iter().filter(|l| l.starts_with('>')).collect();
    assert_eq!(marked.len(), 2, "{timeline:#?}");
    assert!(
        marked
            .iter()
            .all(|l| l.contains("write") && l.contains(" 2")),
        "{timeline:#?}"
    );
}

/// One acquire recorded across a whole waiting loop (the way histories were recorded
/// before each attempt became its own operation) hides a double grant: the checker may
/// place the grant anywhere in the wait, after the other holder let go. Recorded try by
/// try, the same run shows the grant while the other client held the lock.
#[test]
fn tries_recorded_one_by_one_expose_what_a_wide_acquire_hides() {
    let wide = Build::new()
        .acquire(0, 0, 1000, 10_000, None)
        .acquire(1, 100, 110, 10_000, None)
        .release(1, 590, 600, Phase::Ok)
        .check();
    expect(
        &wide,
        Property::LockLinearizability,
        Verdict::Ok,
        "the wide window admits a grant after c1's release",
    );
    let tight = Build::new()
        .acquire(1, 100, 110, 10_000, None)
        .acquire_ended(0, 200, 210, 10_000, Phase::Fail)
        .acquire(0, 300, 310, 10_000, None)
        .release(1, 590, 600, Phase::Ok)
        .check();
    violation(&tight, Property::LockLinearizability, "double grant");
}

/// A renewal extends the lease: a release after the first lease ran out, but within the
/// renewed one, proves no foreign release, and neither does an acquire or renewal of
/// the releasing client whose outcome is unknown.
#[test]
fn renewals_and_unknown_outcomes_leave_no_proof_of_a_foreign_release() {
    let renewed = Build::new()
        .acquire(0, 0, 1, 100, None)
        .renew(0, 50, 51, 1000)
        .acquire(1, 150, 151, 100, None)
        .release(0, 200, 201, Phase::Ok)
        .check();
    expect(&renewed, Property::NoForeignRelease, Verdict::Ok, "");
    let unknown = Build::new()
        .acquire(0, 0, 1, 100, None)
        .acquire(1, 150, 151, 100, None)
        .acquire_ended(0, 160, 170, 100, Phase::Info)
        .release(0, 200, 201, Phase::Ok)
        .check();
    expect(&unknown, Property::NoForeignRelease, Verdict::Ok, "");
}

/// c0's acquire never answered (it may or may not have taken effect); c1 and c2 were
/// both surely granted, with overlapping leases. The explanation names the holder the
/// history shows (c1's grant), never c0, whose grant is only possible.
#[test]
fn an_explanation_names_no_holder_whose_grant_is_only_possible() {
    let r = Build::new()
        .acquire_ended(0, 0, 1, 10_000, Phase::Info)
        .acquire(1, 2, 3, 10_000, Some(2))
        .acquire(2, 4, 5, 10_000, Some(3))
        .check();
    let lock = violation(&r, Property::LockLinearizability, "double grant");
    assert!(
        !lock.summary.contains("owner 0"),
        "c0's grant is only possible: {}",
        lock.summary
    );
    assert!(lock.summary.contains("owner 1"), "{}", lock.summary);

    // With only c0's unknown acquire before it, c1's grant is no violation at all.
    let r = Build::new()
        .acquire_ended(0, 0, 1, 10_000, Phase::Info)
        .acquire(1, 2, 3, 10_000, Some(2))
        .check();
    expect(&r, Property::LockLinearizability, Verdict::Ok, "");
}

/// A library that rounds a 500 ms lease up to a whole second, and says so (protocol
/// v2's `lease_ms` on its `ok`): a refusal 800 ms after its grant is the lock being
/// busy, not "busy while free" — the grant is held to the lease it really got.
#[test]
fn the_lease_a_lock_says_it_granted_is_the_one_the_checks_hold_it_to() {
    let history = |granted: Option<u64>| {
        Build::new()
            .acquire_invoked(0, 0, 500)
            .ev(0, OpKind::Acquire, Phase::Ok, 1, |e| {
                e.token = Some(1);
                e.lease_ns = granted.map(|ms| ms * MS);
            })
            .acquire_ended(1, 800, 801, 500, Phase::Fail)
            .check()
    };
    let asked = history(None);
    violation(
        &asked,
        Property::LockLinearizability,
        "busy while it was free",
    );
    let said = history(Some(1_000));
    expect(&said, Property::LockLinearizability, Verdict::Ok, "");
}

/// A Redlock split vote: three contenders each took a minority of the nodes and were
/// all refused while nobody held the lock. Held against a lock that promises a holder
/// behind every refusal; not against one whose header says it may refuse spuriously —
/// whose grants are still held to the lock.
#[test]
fn a_quorum_lock_may_refuse_while_nobody_holds_it() {
    let split = |spurious: bool| {
        let mut b = Build::new()
            .acquire_ended(0, 0, 2, 500, Phase::Fail)
            .acquire_ended(1, 0, 2, 500, Phase::Fail)
            .acquire_ended(2, 1, 3, 500, Phase::Fail)
            .acquire(0, 10, 12, 500, None);
        b.history.header.spurious_refusals = spurious;
        b
    };
    violation(
        &split(false).check(),
        Property::LockLinearizability,
        "busy while it was free",
    );
    expect(
        &split(true).check(),
        Property::LockLinearizability,
        Verdict::Ok,
        "a split vote refuses everyone",
    );
    let double = split(true).acquire(1, 20, 22, 500, None).check();
    violation(&double, Property::LockLinearizability, "double grant");
}

/// A write reported failed whose value a later update built on: the final read moves
/// past what the acknowledged updates add up to, which no history where each update
/// took effect once can show — a violation naming the failed write, never "as
/// expected".
#[test]
fn change_from_a_failed_write_is_not_as_expected() {
    let mut b = Build::new();
    b.history.header.resource = Some(ResourceSpec::Counter { initial: 0 });
    let b = b
        // c0 writes 1 over its read of 0 and is told the write failed (rolled back)...
        .read(0, 0, 1, None)
        .ev(0, OpKind::Write, Phase::Invoke, 2, |e| {
            e.value = Some(1.into())
        })
        .ev(0, OpKind::Write, Phase::Fail, 3, |_| {})
        // ...but c1 read its 1 and wrote 2.
        .read(1, 4, 5, Some(1))
        .write(1, 6, 7, 2, None)
        .read(2, 10, 11, Some(2));
    let r = b.check();
    let safety = check_of(&r, Property::ResourceSafety);
    assert_eq!(safety.verdict, Verdict::Violation, "{}", safety.summary);
    assert_eq!(safety.stats.get("unexplained_change"), Some(&1.into()));
    assert!(
        safety.summary.contains("final read shows 2"),
        "{}",
        safety.summary
    );
    assert_eq!(safety.ops.len(), 1, "{:?}", safety.ops);
    assert!(
        safety.ops[0].description.contains("reported failed"),
        "{:?}",
        safety.ops
    );
}
