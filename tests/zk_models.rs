//! The ZooKeeper lock rows through the catalog: each verdict, what each counterexample
//! shows (the node operations, the fault, the session that expired and who ends up
//! inside), and for the rows that hold, the variant that breaks, the path that frees a
//! crashed holder's lock and the wake-ups a release costs.
#![cfg(feature = "model-check")]

use locklab_models::catalog::{find, Family, Verdict};
use locklab_models::checkable::Story;
use locklab_models::registry::{Fault, Property};
use locklab_models::scenario::Params;
use locklab_models::zk::catalog::RECIPE;
use locklab_models::zk::{Action, Phase, Recipe, WatchOn, Work, ZkLock};
use stateright::Model;

use crate::common::models;
use models::{
    assert_before, assert_family_rows, assert_fencing_saves_only_the_resource, assert_two_inside,
    one, run, stories, story, walk,
};

/// A variant of a row, searched directly: its stories.
fn variant(recipe: Recipe, work: Work, properties: &'static [Property], p: &Params) -> Vec<Story> {
    stories(
        &ZkLock::new(recipe, work).model(properties, p),
        (recipe, work),
    )
}

const MX: &[Property] = &[Property::MutualExclusion];
const RES: &[Property] = &[Property::ResourceSafety];
const MX_LIVE: &[Property] = &[Property::MutualExclusion, Property::Liveness];

#[test]
fn every_zk_row_reaches_its_verdict() {
    assert_family_rows(
        Family::Zk,
        &[
            "zk-sequential",
            "zk-sequential-pause",
            "zk-sequential-fenced",
            "zk-check-write",
            "zk-until-lost",
            "zk-create-conn-loss",
            "zk-herd",
            "zk-plain-znode",
            "zk-leader-isolated",
            "zk-hung-worker",
            "zk-clock-jump",
        ],
    );
}

/// A leap of the leader's clock times out the running, connected holder's session on
/// the leader: the story has the leap, the holder's node deleted with its session while
/// the holder is still inside (neither paused nor cut off), and the next client's node
/// the lowest with both inside. Fenced by the czxid, the same leap breaks nothing.
#[test]
fn a_leap_of_the_leaders_clock_expires_a_connected_holders_session() {
    let r = run("zk-clock-jump");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let s = r
        .stories
        .iter()
        .find(|s| s.property == Property::MutualExclusion)
        .expect("a story");
    let t = story(&r, Property::MutualExclusion);
    let leap = s
        .steps
        .iter()
        .position(|x| x.action.contains("leader's clock leaps ahead"))
        .unwrap_or_else(|| panic!("the leap is a step\n{t}"));
    assert!(s.steps[leap].fault, "{t}");
    assert!(
        s.steps[leap]
            .action
            .contains("session 1 expired, ZooKeeper deletes /lock/c0-"),
        "the holder's session and node go at the leap\n{t}"
    );
    let before = s.steps[leap - 1].state.join("\n");
    assert!(
        before.contains("c0: IN CRITICAL SECTION")
            && !before.contains("[PAUSED]")
            && !before.contains("[PARTITIONED]"),
        "the holder is inside, neither paused nor cut off, when its session goes\n{t}"
    );
    assert_two_inside(&r, &t, |l| l.starts_with("c0:"));
    assert!(s.closing.contains("leader's clock"), "{}", s.closing);
    let fenced = variant(
        Recipe::CURATOR,
        Work::Fenced,
        RES,
        &Params::BASE.with_faults(&[(Fault::Jump, 1)]),
    );
    assert!(fenced.is_empty(), "the czxid keeps the late write out");
}

/// The leader cut off from its quorum changes leaders, never holders: the new leader
/// gives every session a fresh timeout, so the holder keeps its node; told as a cut.
#[test]
fn an_isolated_leader_restarts_every_session_and_grants_nothing() {
    assert_eq!(run("zk-leader-isolated").verdict, Verdict::Holds);
    let m = ZkLock::new(RECIPE, Work::Outside).model(
        &[Property::MutualExclusion],
        &Params::BASE.with_faults(&[(Fault::Failover, 1)]),
    );
    use Action::*;
    let before = models::walk(&m, &[Step(0), Step(0), Step(0), Step(0), Tick]).0;
    let (after, told) = models::walk(&m, &[Step(0), Step(0), Step(0), Step(0), Tick, Failover]);
    let deadline = |s: &locklab_models::zk::ZkLockState| {
        s.zk.sessions
            .values()
            .map(|x| x.deadline.lo)
            .collect::<Vec<_>>()
    };
    assert!(
        deadline(&after)
            .iter()
            .zip(deadline(&before))
            .all(|(a, b)| *a > b),
        "fresh timeouts: {:?} after {:?}",
        deadline(&after),
        deadline(&before)
    );
    assert!(
        told[5].contains("cut off from the other servers") && told[5].contains("fresh timeout"),
        "{told:?}"
    );
}

#[test]
fn pause_story_expires_the_paused_holders_session_and_grants_the_next() {
    let r = run("zk-sequential-pause");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let t = story(&r, Property::MutualExclusion);
    assert_before(
        &t,
        &[
            (
                "c0: create /lock/n-0000000000 (ephemeral, sequential) -> czxid 1",
                "c0: getChildren /lock -> [n-0000000000]",
            ),
            (
                "c0: getChildren /lock -> [n-0000000000]",
                "c0 pauses (GC / SIGSTOP): its pings stop too FAULT",
            ),
            (
                "c0 pauses",
                "session 1 expired, ZooKeeper deletes /lock/n-0000000000",
            ),
        ],
    );
    assert!(
        t.contains("c1: create /lock/n-0000000001 (ephemeral, sequential) -> czxid 2"),
        "{t}"
    );
    assert_before(
        &t,
        &[(
            "session 1 expired",
            "c1: getChildren /lock -> [n-0000000001]",
        )],
    );
    assert_two_inside(&r, &t, |l| l.starts_with("c0:") && l.ends_with("[PAUSED]"));
    assert!(
        t.contains("resumed believing it still holds the lock"),
        "{t}"
    );
}

#[test]
fn until_lost_story_keeps_the_cut_off_holder_working_and_suspended_stops_it() {
    let r = run("zk-until-lost");
    let t = story(&r, Property::MutualExclusion);
    assert_before(
        &t,
        &[(
            "c0 is partitioned from the ensemble",
            "session 1 expired, ZooKeeper deletes /lock/n-0000000000",
        )],
    );
    assert_two_inside(&r, &t, |l| l.contains("[PARTITIONED]"));
    assert!(t.contains("Stopping at SUSPENDED"), "{t}");
    // The same partition, the holder stopping at SUSPENDED: the lock holds.
    assert!(variant(RECIPE, Work::Outside, MX, &one(Fault::Partition)).is_empty());
    // And when it only hears LOST, it hears it when the partition heals.
    let m = find("zk-until-lost").expect("row").defaults.clone();
    let m = ZkLock::new(
        Recipe {
            stop_at_suspended: false,
            ..RECIPE
        },
        Work::Outside,
    )
    .model(MX, &m);
    use Action::*;
    let (s, told) = walk(
        &m,
        &[Step(0), Step(0), Step(0), Partition(0), Tick, Tick, Heal(0)],
    );
    assert!(s.clients[0].lost && s.clients[0].phase == Phase::Done);
    assert!(
        told[6].contains("ZooKeeper says its session expired (LOST)"),
        "{told:?}"
    );
}

#[test]
fn crash_frees_the_lock_when_the_session_expires_and_the_watch_fires() {
    assert_eq!(run("zk-sequential").verdict, Verdict::Holds);
    let m = ZkLock::new(RECIPE, Work::Outside).model(MX_LIVE, &one(Fault::Crash));
    use Action::*;
    let (s, told) = walk(
        &m,
        &[
            Step(0), // connect
            Step(0), // create
            Step(0), // getChildren: lowest
            Crash(0),
            Step(1), // connect
            Step(1), // create
            Step(1), // getChildren: behind n-0000000000
            Step(1), // exists n-0000000000 (watch)
            Tick,
            Ping(1),
            Tick, // session 1 expires
        ],
    );
    assert_eq!(s.clients[1].phase, Phase::Wait);
    assert!(
        told[7].contains(
            "c1: exists /lock/n-0000000000 (watch) -> (czxid 1, version 0, ephemeral of session 1)"
        ),
        "{told:?}"
    );
    assert!(
        told[10].contains(
            "session 1 expired, ZooKeeper deletes /lock/n-0000000000; watch fired for c1 (/lock/n-0000000000 changed)"
        ),
        "{told:?}"
    );
    let s = m.next_state(&s, Step(1)).expect("c1 reads the event");
    assert_eq!(s.clients[1].wakeups, 1);
    let s = m.next_state(&s, Step(1)).expect("c1 lists again");
    assert_eq!(s.clients[1].phase, Phase::Critical(0));
    // Before the session expires, c1 stays queued.
    let (queued, _) = walk(
        &m,
        &[
            Step(0),
            Step(0),
            Step(0),
            Crash(0),
            Step(1),
            Step(1),
            Step(1),
            Step(1),
        ],
    );
    assert!(m.next_state(&queued, Step(1)).is_none(), "still queued");
}

#[test]
fn fencing_by_czxid_saves_the_resource_the_lock_does_not() {
    // The same pause without the token: the paused holder's stale write is accepted.
    // With the token the lock is still broken; only the resource is safe.
    assert_fencing_saves_only_the_resource(
        "zk-sequential-fenced",
        &variant(RECIPE, Work::Outside, RES, &one(Fault::Pause)),
        &[("c0 reads the resource", "c0 pauses")],
        &variant(RECIPE, Work::Fenced, MX, &one(Fault::Pause)),
    );
}

#[test]
fn check_write_refuses_the_paused_holders_multi() {
    assert_eq!(run("zk-check-write").verdict, Verdict::Holds);
    assert_eq!(
        variant(RECIPE, Work::MultiChecked, MX, &one(Fault::Pause)).len(),
        1,
        "the lock itself still breaks"
    );
    let m = ZkLock::new(RECIPE, Work::MultiChecked).model(RES, &one(Fault::Pause));
    use Action::*;
    let (s, told) = walk(
        &m,
        &[
            Step(0), // connect
            Step(0), // create
            Step(0), // getChildren: lowest
            Step(0), // getData /counter
            Pause(0),
            Step(1), // connect
            Tick,
            Step(1), // create
            Tick,    // session 1 expires
            Step(1), // getChildren: lowest
            Step(1), // getData /counter
            Step(1), // multi
            Resume(0),
            Step(0), // multi, refused
        ],
    );
    assert!(
        told[11]
            .contains("c1: multi(check(/lock/n-0000000001, -1), setData /counter '1' -1) -> OK"),
        "{told:?}"
    );
    assert!(told[13].contains("SESSIONEXPIRED"), "{told:?}");
    assert_eq!(s.commits, 1, "only c1's write committed: {s:#?}");
    assert_eq!(s.zk.nodes["/counter"].data, "1");
}

#[test]
fn create_conn_loss_story_leaves_an_orphan_and_protection_finds_it() {
    let r = run("zk-create-conn-loss");
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::Liveness]));
    let t = story(&r, Property::Liveness);
    assert_before(
        &t,
        &[(
            "c0 (reply lost): create /lock/n-0000000000 (ephemeral, sequential) -> czxid 1 FAULT",
            "create /lock/n-0000000001 (ephemeral, sequential)",
        )],
    );
    assert!(
        t.contains("nothing will delete /lock/n-0000000000 (ephemeral of live session 1)"),
        "{t}"
    );
    // Curator's protected create finds its node after the lost reply.
    let three = Params {
        clients: 3,
        ..one(Fault::Drop)
    };
    assert!(variant(Recipe::CURATOR, Work::Outside, MX_LIVE, &three).is_empty());
}

/// The waiters the first release wakes with `n` clients all queued (the holder's own
/// parent watch, set by its first `getChildren`, fires too, for no one waiting).
fn wakeups_per_release(watch_on: WatchOn, n: usize) -> (usize, String) {
    let p = Params {
        clients: n,
        ..Params::BASE
    };
    let m = ZkLock::new(Recipe { watch_on, ..RECIPE }, Work::Outside).model(MX_LIVE, &p);
    use Action::*;
    let mut path = Vec::new();
    for c in 0..n as u8 {
        path.extend([Step(c), Step(c)]); // connect, create
    }
    for c in 0..n as u8 {
        path.push(Step(c)); // getChildren
        if c > 0 && watch_on == WatchOn::Predecessor {
            path.push(Step(c)); // exists predecessor (watch)
        }
    }
    path.extend([Step(0), Step(0), Step(0)]); // read, write, delete
    let (s, told) = walk(&m, &path);
    assert!((1..n).all(|c| s.clients[c].phase == Phase::Wait), "{s:#?}");
    let woken =
        s.zk.notified
            .iter()
            .filter(|w| s.clients[1..].iter().any(|c| c.session == Some(w.session)))
            .count();
    (woken, told.last().cloned().unwrap_or_default())
}

#[test]
fn herd_holds_but_wakes_every_waiter_at_each_release() {
    assert_eq!(run("zk-herd").verdict, Verdict::Holds);
    let (herd, told) = wakeups_per_release(WatchOn::Parent, 8);
    assert_eq!(herd, 7, "O(N): every waiter");
    assert!(
        (1..8).all(|c| told.contains(&format!("watch fired for c{c} (/lock changed)"))),
        "{told}"
    );
    assert!(
        told.starts_with("c0: delete /lock/n-0000000000 -1 -> OK"),
        "{told}"
    );
    let (pred, told) = wakeups_per_release(WatchOn::Predecessor, 8);
    assert_eq!(pred, 1, "O(1): the next one only");
    assert!(
        told.ends_with("watch fired for c1 (/lock/n-0000000000 changed)"),
        "{told}"
    );
    let lesson = find("zk-herd").expect("row").lesson;
    assert!(lesson.contains("O(N) vs O(1)"), "{lesson}");
}

/// The plain-znode spin lock holds, but its waiters are not queued: a release wakes
/// every waiter, and the one that asked last may create first.
#[test]
fn a_plain_znode_excludes_but_grants_in_no_order() {
    assert_eq!(run("zk-plain-znode").verdict, Verdict::Holds);
    let p = Params {
        clients: 3,
        ..Params::BASE
    };
    let plain = Recipe {
        sequential: false,
        ..RECIPE
    };
    let m = ZkLock::new(plain, Work::Outside).model(MX, &p);
    use Action::*;
    let (s, told) = walk(
        &m,
        &[
            Step(0),
            Step(0), // create /lock/holder: c0 holds
            Step(1),
            Step(1), // create: NODEEXISTS
            Step(1), // exists /lock/holder (watch)
            Step(2),
            Step(2), // create: NODEEXISTS
            Step(2), // exists (watch)
            Step(0),
            Step(0),
            Step(0), // read, write, delete
            Step(2), // c2 reads its event
            Step(2), // and creates first
        ],
    );
    assert!(told[3].contains("NODEEXISTS"), "{told:?}");
    assert!(
        told[10].contains("watch fired for c1") && told[10].contains("watch fired for c2"),
        "every waiter wakes: {told:?}"
    );
    assert_eq!(s.clients[2].phase, Phase::Critical(0), "{told:?}");
    assert_eq!(s.clients[1].phase, Phase::Wait, "c1 asked first: {told:?}");
    // No request order to judge FIFO by; both other promises hold.
    let progress = locklab_models::catalog::progress(
        "zk-plain-znode",
        &locklab_models::catalog::Overrides::default(),
        locklab_models::check::Limits::default(),
    )
    .expect("a row")
    .expect("progress stated");
    let promises: Vec<String> = progress.iter().map(|v| v.promise.to_string()).collect();
    assert_eq!(
        promises,
        ["eventually-free", "starvation-free"],
        "{progress:?}"
    );
}
