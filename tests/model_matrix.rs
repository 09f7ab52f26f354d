//! The verdict matrix and the stories, through the catalog and the built binary.
#![cfg(feature = "model-check")]

use std::process::Command;

use locklab_models::catalog::{check, find, params, scenarios, Overrides, Report, Verdict};
use locklab_models::check::Limits;
use locklab_models::registry::{Fault, Property};

use crate::common::models;
use models::{run_with as run, story};

#[test]
fn every_scenario_reaches_its_expected_verdict() {
    for s in scenarios() {
        let r = run(s.id.name(), Overrides::default());
        assert!(
            r.matches_expected,
            "{}: got {:?}, expected {:?}",
            s.id, r.verdict, r.expected
        );
    }
}

/// The arrows that never arrived in the first story for `property` of scenario `id`,
/// as `(from, to, label)`.
fn lost_arrows(id: &str, property: Property) -> Vec<(String, String, String)> {
    let r = run(id, Overrides::default());
    let s = r
        .stories
        .iter()
        .find(|s| s.property == property)
        .unwrap_or_else(|| panic!("{id}: no story for {property}"));
    s.steps
        .iter()
        .flat_map(|st| &st.scene.exchange.arrows)
        .filter(|a| a.lost)
        .map(|a| (a.from.clone(), a.to.clone(), a.label.clone()))
        .collect()
}

/// Each family's crux is drawn, not left to the reader: the write the promoted replica
/// never got, the session expiry the cut-off holder never heard, the killed session
/// whose lock the server freed without telling its client.
#[test]
fn the_crux_of_each_family_is_drawn_as_a_message_that_never_arrived() {
    let redis = lost_arrows("redis-failover", Property::MutualExclusion);
    assert!(
        redis.iter().any(|(f, t, l)| f == "redis0"
            && t == "redis1"
            && l.contains("never replicated: SET lock c0")),
        "{redis:?}"
    );
    let zk = lost_arrows("zk-until-lost", Property::MutualExclusion);
    assert!(
        zk.iter()
            .any(|(f, t, l)| f == "zk" && t == "c0" && l.contains("expired: not heard")),
        "{zk:?}"
    );
    // The partition itself is drawn as a cut on the holder's lane.
    let r = run("zk-until-lost", Overrides::default());
    assert!(
        r.stories[0]
            .steps
            .iter()
            .any(|st| st.scene.lanes.iter().any(|l| l.lane == "c0" && l.cut)),
        "no cut drawn"
    );
    let etcd = lost_arrows("etcd-lease-pause", Property::MutualExclusion);
    assert!(
        etcd.iter()
            .any(|(f, t, l)| f == "etcd" && t == "c0" && l.contains("lease 1 expired: not heard")),
        "{etcd:?}"
    );
    // A Redis key that runs out under a paused holder is marked on its node.
    let pause = run("redis-lua-pause", Overrides::default());
    let expiry = pause.stories[0]
        .steps
        .iter()
        .flat_map(|st| &st.scene.exchange.marks);
    assert!(
        expiry
            .clone()
            .any(|m| m.lane.as_deref() == Some("redis0")
                && m.label == "c0's key expires: nobody told"),
        "{:?}",
        expiry.collect::<Vec<_>>()
    );
    let sql = lost_arrows("mysql-getlock-conn-kill", Property::MutualExclusion);
    assert!(
        sql.iter()
            .any(|(f, t, l)| f == "server" && t == "c0" && l.contains("locks freed: not heard")),
        "{sql:?}"
    );
}

#[test]
fn failover_story_shows_promotion_before_replication() {
    let r = run("redis-failover", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    let set = t.find("c0: SET lock c0 NX PX").expect("c0 acquires");
    let promote = t.find("Sentinel promotes replica").expect("failover");
    assert!(
        set < promote && t.contains("write(s) not yet replicated"),
        "{t}"
    );
    assert!(
        t.contains("c0: IN CRITICAL SECTION") && t.contains("c1: IN CRITICAL SECTION"),
        "{t}"
    );
}

/// Split brain: the cut comes first, the isolated master grants c0 after it, Sentinel
/// promotes the replica, and c1 is granted on the new master — two masters, two
/// holders, and no process crashed or paused.
#[test]
fn split_brain_story_shows_two_masters_granting_without_a_crash() {
    let r = run("redis-split-brain", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    let cut = t
        .find("a partition cuts the master redis0 and c0 off")
        .expect("the cut");
    let granted_alone = t
        .find("c0: SET lock c0 NX PX 2 -> OK")
        .expect("c0 on redis0");
    let promote = t.find("promotes replica redis1").expect("the promotion");
    let second = t
        .find("c1: SET lock c1 NX PX 2 -> OK")
        .expect("c1 on redis1");
    assert!(
        cut < granted_alone && granted_alone < promote && promote < second,
        "{t}"
    );
    assert!(
        t.contains("old master, cut off: still grants on its side"),
        "{t}"
    );
    assert!(
        t.contains("c0: IN CRITICAL SECTION") && t.contains("c1: IN CRITICAL SECTION"),
        "{t}"
    );
    assert!(!t.contains("CRASHED") && !t.contains("PAUSED"), "{t}");
    assert!(t.contains("no process crashed"), "{t}");
    // The partition heals in the end (its end is owed, as a pause's), so the lock is
    // free again; a client may still starve, as in any retry loop, once clients lock
    // again and again.
    let (_, out, _) = cli(&[
        "check",
        "redis-split-brain",
        "--progress",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let promises = v["progress"].as_array().expect("progress");
    let of = |name: &str| {
        promises
            .iter()
            .find(|p| p["promise"] == name)
            .unwrap_or_else(|| panic!("{name}: {promises:?}"))
    };
    assert_eq!(promises.len(), 2, "{promises:?}");
    assert_eq!(of("eventually-free")["verdict"], "ok");
    let starving = of("starvation-free");
    assert_eq!(starving["verdict"], "violation");
    assert_eq!(starving["repeating"], true);
    assert!(
        starving["lasso"]["closing"]
            .as_str()
            .is_some_and(|c| c.contains("takes the lock again and again")),
        "{starving}"
    );
}

/// min-replicas-max-lag narrows the window to lag + lease against Sentinel's
/// down-after: at the default lease it remains (c0 is granted inside the lag), with a
/// lease of one tick it closes.
#[test]
fn min_replicas_leaves_a_window_of_lag_plus_lease() {
    let r = run("redis-split-brain-min-replicas", Overrides::default());
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let t = story(&r, Property::MutualExclusion);
    assert!(
        t.contains("min-replicas-max-lag let redis0 accept writes for 1 tick(s)"),
        "{t}"
    );
    let short = run(
        "redis-split-brain-min-replicas",
        Overrides {
            ttl: Some(1),
            ..Overrides::default()
        },
    );
    assert_eq!(short.verdict, Verdict::Holds);
    // Without min-replicas the same short lease does not help: the old master grants
    // for as long as it is cut off.
    let plain = run(
        "redis-split-brain",
        Overrides {
            ttl: Some(1),
            ..Overrides::default()
        },
    );
    assert_eq!(
        plain.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
}

#[test]
fn lua_pause_story_shows_expiry_during_pause() {
    let r = run("redis-lua-pause", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    assert!(
        t.contains("pauses") && t.contains("FAULT") && t.contains("time passes"),
        "{t}"
    );
    assert!(
        t.contains("[PAUSED]") && t.matches("IN CRITICAL SECTION").count() >= 2,
        "{t}"
    );
    assert!(t.contains("c1: SET lock c1 NX PX 2 -> OK"), "{t}");
}

#[test]
fn redlock_restart_story_shows_lost_data() {
    let r = run("redlock-restart", Overrides::default());
    let t = story(&r, Property::MutualExclusion);
    assert!(
        t.contains("crashes; without persistence its keys are gone")
            && t.contains("restarts, empty"),
        "{t}"
    );
    let last = r.stories[0].steps.last().expect("steps");
    assert_eq!(
        last.state
            .iter()
            .filter(|l| l.contains("IN CRITICAL SECTION"))
            .count(),
        2,
        "{t}"
    );
}

#[test]
fn del_unconditional_story_shows_foreign_del() {
    let r = run("redis-del-unconditional", Overrides::default());
    let t = story(&r, Property::NoForeignRelease);
    assert!(
        t.contains("c0: DEL lock -> (integer) 1") || t.contains("c1: DEL lock -> (integer) 1"),
        "{t}"
    );
    assert!(
        t.contains("unconditional DEL removed another client's lock"),
        "{t}"
    );
    let m = story(&r, Property::MutualExclusion);
    assert!(m.matches("IN CRITICAL SECTION").count() >= 2, "{m}");
}

#[test]
fn failover_wait_depends_on_replicas() {
    let one = run(
        "redis-failover-wait",
        Overrides {
            replicas: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(one.verdict, Verdict::Holds);
    let two = run(
        "redis-failover-wait",
        Overrides {
            replicas: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(
        two.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    assert!(story(&two, Property::MutualExclusion).contains("Sentinel promotes"));
}

#[test]
fn redlock_keeps_verdicts_with_3_and_7_nodes() {
    for nodes in [3, 7] {
        for id in [
            "redlock",
            "redlock-restart",
            "redlock-clock-jump",
            "redlock-pause",
        ] {
            let r = run(
                id,
                Overrides {
                    nodes: Some(nodes),
                    ..Default::default()
                },
            );
            assert!(r.matches_expected, "{id} --nodes {nodes}: {:?}", r.verdict);
        }
    }
}

#[test]
fn counterexamples_are_shortest_against_iterative_deepening() {
    let ids = [
        "redis-failover",
        "redis-lua-pause",
        "redis-del-unconditional",
        "redis-timestamp-value",
        "inventory-timestamp-cas",
        "redlock-clock-jump",
        "mysql-unique-reaper",
        "mysql-lease-dbtime-pause",
        "pg-advisory-pool",
    ];
    for id in ids {
        let s = find(id).expect("id");
        let p = params(s, &Overrides::default()).expect("bounds");
        let depths = s.build(&p).depths(Limits::default());
        assert!(!depths.is_empty(), "{id}");
        for d in depths {
            assert_eq!(d.iterative_deepening, Some(d.bfs), "{id} {}", d.property);
        }
    }
}

#[test]
fn json_keeps_the_spellings() {
    let r = run("redis-del-unconditional", Overrides::default());
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["verdict"], "violation");
    assert_eq!(
        v["violated"],
        serde_json::json!(["mutual-exclusion", "no-foreign-release"])
    );
    assert_eq!(v["params"]["faults"], serde_json::json!([["pause", 1]]));
    assert_eq!(v["expected"]["verdict"], "violation");
    assert_eq!(v["stories"][0]["property"], "mutual-exclusion");
    let s = serde_json::to_value(find("redlock-restart").expect("row")).expect("json");
    assert_eq!(s["family"], "redlock");
    assert_eq!(s["properties"], serde_json::json!(["mutual-exclusion"]));
    assert_eq!(s["defaults"]["faults"], serde_json::json!([["restart", 1]]));
    assert!(s.get("model").is_none(), "{s}");
    assert_eq!(r.params.faults, vec![(Fault::Pause, 1)]);
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .output()
        .expect("run locklab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_exit_codes() {
    let (code, _, err) = cli(&["check", "redis-failovr"]);
    assert_eq!(code, 2);
    assert!(err.contains("redis-failover"), "{err}");
    let (code, out, _) = cli(&["check", "redlok", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(out.contains("redlock"), "{out}");
    let (code, _, err) = cli(&["check", "redis-lua", "--clients", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--clients"), "{err}");
    let (code, _, err) = cli(&["check", "redis-lua", "--nodes", "3"]);
    assert_eq!((code, err.contains("--nodes")), (2, true));
    let (code, _, err) = cli(&["check", "redis-lua", "--faults", "meteor=1"]);
    assert_eq!((code, err.contains("--faults")), (2, true));
    let (code, _, err) = cli(&["explore", "redis-lua", "--addr", "0.0.0.0:3999"]);
    assert_eq!((code, err.contains("loopback")), (2, true));
    assert_eq!(cli(&["check", "redis-lua"]).0, 0);
    let (code, out, _) = cli(&["check", "redis-failover", "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["violated"][0], "mutual-exclusion");
    assert_eq!(
        cli(&["check", "redlock-delayed-restart", "--max-states", "100"]).0,
        3
    );
    assert_eq!(cli(&["models", "--format", "json"]).0, 0);
    assert_eq!(cli(&["explain", "redis-lua-pause"]).0, 1);
}

/// `matrix --only` checks the rows it names, in catalog order, with their progress
/// columns; an id that names no row is exit 2 naming the closest ids, before any search.
#[test]
fn matrix_checks_only_the_rows_it_is_given() {
    let (code, out, _) = cli(&[
        "matrix",
        "--only",
        "redis-failover,redis-lua",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let ids: Vec<&str> = v["scenarios"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ids, ["redis-lua", "redis-failover"]);
    assert_eq!(v["all_match"], true);
    assert!(v["scenarios"][0]["progress"].is_object(), "{out}");
    let (code, _, err) = cli(&["matrix", "--only", "redis-lua,redis-failovr"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("redis-failovr") && err.contains("redis-failover"),
        "{err}"
    );
}

/// `models --progress` adds the checker's progress verdicts to each row: a stuck row's
/// broken promise with its lasso's shape, FIFO where requests are ordered, and nothing
/// for a row without a lock; the same in JSON.
#[test]
fn models_progress_column() {
    // The rows it reads: every row's progress is the report's and `matrix`'s, and
    // `models/tests/progress.rs` pins each verdict.
    let only = "redis-setnx-no-ttl,zk-sequential,inventory-no-lock,mysql-unique-crash,\
                etcd-lease-crash,inventory-one-sql";
    let (code, out, _) = cli(&["models", "--progress", "--only", only]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("progress: ").count(), 6, "{out}");
    let line = |id: &str| {
        let at = out.find(&format!("{id} ")).expect(id);
        out[at..]
            .lines()
            .nth(2)
            .expect("a progress line")
            .to_string()
    };
    let stuck = line("redis-setnx-no-ttl");
    assert!(
        stuck.contains("eventually-free VIOLATED: c0 waits for ever (7 steps"),
        "{stuck}"
    );
    assert!(stuck.contains("fifo — (no request order)"), "{stuck}");
    let zk = line("zk-sequential");
    assert!(zk.contains("starvation-free holds · fifo holds"), "{zk}");
    assert!(line("inventory-no-lock").contains("not stated (no lock)"));
    let (code, out, _) = cli(&["models", "--progress", "--only", only, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let row = |id: &str| {
        v["scenarios"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["id"] == id))
            .cloned()
            .expect(id)
    };
    assert_eq!(
        row("mysql-unique-crash")["progress"]["eventually-free"]["verdict"],
        "violation"
    );
    assert_eq!(row("etcd-lease-crash")["progress"]["fifo"]["verdict"], "ok");
    assert!(row("inventory-one-sql")["progress"].is_null());
    let (code, _, err) = cli(&["models", "--only", "zk-sequentail"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zk-sequential"), "names the closest id: {err}");
}

/// `check --progress`: the promises' verdicts beside the safety verdict, in text and
/// JSON, and in the exit code — a broken promise is 1 even where safety holds, an
/// undecided one 3, a row without a lock to wait for 2.
#[test]
fn check_progress_exit_codes_and_output() {
    // A retry loop keeps the lock free after a crash and lets a client starve.
    let (code, out, _) = cli(&["check", "redis-lua", "--progress"]);
    assert_eq!(code, 1, "{out}");
    // One answer: the headline says what the exit code is (safety alone holds).
    assert!(
        out.starts_with("redis-lua: VIOLATED: starvation-free (progress); safety HOLDS"),
        "{out}"
    );
    let (code, json, _) = cli(&["check", "redis-lua", "--progress", "--format", "json"]);
    assert_eq!(code, 1, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["verdict"], "violation", "{v:#}");
    assert_eq!(v["broken"], serde_json::json!(["starvation-free"]), "{v:#}");
    assert_eq!(v["safety"]["verdict"], "ok", "{v:#}");
    assert!(out.contains("eventually-free  holds"), "{out}");
    assert!(out.contains("starvation-free  VIOLATED"), "{out}");
    assert!(
        out.contains("starvation-free: judged with clients that lock again and again"),
        "{out}"
    );
    // A queue keeps both.
    let (code, out, _) = cli(&["check", "zk-sequential", "--progress"]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = cli(&[
        "check",
        "redis-setnx-no-ttl",
        "--progress",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["progress"][0]["promise"], "eventually-free");
    assert_eq!(v["progress"][0]["verdict"], "violation");
    assert!(
        v["progress"][0]["lasso"]["stem"].as_u64() > Some(0),
        "{v:#}"
    );
    // Safety's 5,349 states fit under the limit, and the starvation graph's 4,064 (its
    // clients lock again and again), but the eventually-free graph's 5,827 do not.
    let (code, out, _) = cli(&[
        "check",
        "etcd-lease-crash",
        "--progress",
        "--max-states",
        "5600",
    ]);
    assert_eq!(code, 3, "safety holds, progress is undecided: {out}");
    assert!(
        out.starts_with(
            "etcd-lease-crash: UNKNOWN: eventually-free undecided (progress); safety HOLDS"
        ),
        "{out}"
    );
    assert!(out.contains("eventually-free  unknown"), "{out}");
    assert!(out.contains("starvation-free  holds"), "{out}");
    // A protocol file's promises, environment by environment: the crash wedges a lock
    // without TTL.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/protocols/setnx-no-ttl.toml"
    );
    let (code, out, _) = cli(&["check", "--protocol", file, "crash", "--progress"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Lasso for eventually-free"), "{out}");
    let (code, out, _) = cli(&[
        "check",
        "--protocol",
        file,
        "none",
        "--progress",
        "--format",
        "json",
    ]);
    // No fault, nothing wedges; but SETNX's retry loop keeps no order: a client may
    // starve.
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["verdict"], "violation", "{v:#}");
    assert_eq!(v["reports"][0]["verdict"], "violation", "{v:#}");
    assert_eq!(v["reports"][0]["safety"]["verdict"], "ok", "{v:#}");
    assert_eq!(v["reports"][0]["progress"][0]["verdict"], "ok", "{v:#}");
    assert_eq!(
        v["reports"][0]["progress"][1]["promise"], "starvation-free",
        "{v:#}"
    );
    assert_eq!(
        v["reports"][0]["progress"][1]["verdict"], "violation",
        "{v:#}"
    );
    let (code, _, err) = cli(&["check", "inventory-no-lock", "--progress"]);
    assert_eq!((code, err.contains("--progress")), (2, true), "{err}");
    assert_eq!(cli(&["check", "redis-failover", "--progress"]).0, 1);
    // The page draws each lasso, its end marked: a dead end's last row is ∞.
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("p.html");
    let page_arg = page.display().to_string();
    let (code, _, _) = cli(&[
        "check",
        "redis-setnx-no-ttl",
        "--progress",
        "--html",
        &page_arg,
    ]);
    assert_eq!(code, 1);
    let html = std::fs::read_to_string(&page).expect("page written");
    assert!(
        html.contains("Lasso for eventually-free") && html.contains("Lasso for starvation-free")
    );
    assert!(
        html.contains(">∞<") && html.contains("nothing more can happen"),
        "the dead end is drawn"
    );
    assert!(html.contains("A fault struck (step 2: c1 crashes)"));
}

/// Checks `id` with and without the canonical form: the same verdict and the same
/// shortest lengths, and never more states with it. Returns whether it stored fewer.
fn same_answer_reduced(id: &str, o: &Overrides) -> bool {
    let limits = |symmetry| Limits {
        threads: 1,
        symmetry,
        ..Limits::default()
    };
    let with = check(id, o, limits(true), &mut |_| {}).expect("known");
    let without = check(id, o, limits(false), &mut |_| {}).expect("known");
    assert_eq!(with.verdict, without.verdict, "{id} {o:?}");
    let lengths = |r: &Report| {
        r.stories
            .iter()
            .map(|t| (t.property, t.steps.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(lengths(&with), lengths(&without), "{id} {o:?}");
    assert!(
        with.stats.unique_states <= without.stats.unique_states,
        "{id} {o:?}"
    );
    with.stats.unique_states < without.stats.unique_states
}

/// Symmetry reduction (interchangeable Redlock nodes and clients, inventory clients) and
/// the values a model resets once nothing reads them store fewer states; they must not
/// change what is found, nor how short the story is.
#[test]
fn symmetry_changes_neither_verdicts_nor_shortest_lengths() {
    let mut reduced = Vec::new();
    for s in scenarios() {
        // Unreduced, these rows' five nodes make millions of states (the delayed
        // restart 7 million, 16 s in release); with three they ask the same question
        // of their restart in a fraction.
        let o = match s.id.name() {
            "redlock-delayed-restart" | "redlock-restart-aof" => Overrides {
                nodes: Some(3),
                ..Overrides::default()
            },
            _ => Overrides::default(),
        };
        if same_answer_reduced(s.id.name(), &o) {
            reduced.push(s.id.name());
        }
    }
    // The test means something only where symmetry is used.
    for id in ["redlock", "redlock-restart", "redlock-delayed-restart"] {
        assert!(
            reduced.contains(&id),
            "{id}: symmetry stored no fewer states ({reduced:?})"
        );
    }
}

/// With three clients a renaming can move a client past two others, and an attempt can
/// be spent by a tick before its first SET: the Redlock rows that break keep their
/// stories' lengths (unreduced, the rows that hold are 1 and 11 million states).
#[test]
fn three_redlock_clients_keep_verdicts_and_shortest_lengths() {
    for id in ["redlock-restart", "redlock-clock-jump", "redlock-pause"] {
        let o = Overrides {
            nodes: Some(3),
            clients: Some(3),
            ..Overrides::default()
        };
        assert!(same_answer_reduced(id, &o), "{id}: no fewer states");
    }
}

/// Searching on several threads finds what one thread finds: the same states in the
/// same order (so the same counts and depth) and the same stories, step for step. Four
/// threads on two cores: the expansions come back out of order, and the merge must put
/// them back.
#[test]
fn more_threads_change_nothing_but_time() {
    for id in [
        "redlock-delayed-restart",
        "redis-failover",
        "redlock-restart",
        "zk-herd",
        "zk-check-write",
    ] {
        let threads = |threads| Limits {
            threads,
            ..Limits::default()
        };
        let one = check(id, &Overrides::default(), threads(1), &mut |_| {}).expect("known");
        let four = check(id, &Overrides::default(), threads(4), &mut |_| {}).expect("known");
        let counts = |r: &Report| {
            (
                r.stats.states,
                r.stats.unique_states,
                r.stats.max_depth,
                r.verdict.clone(),
            )
        };
        assert_eq!(counts(&one), counts(&four), "{id}");
        let stories = |r: &Report| serde_json::to_string(&r.stories).expect("stories serialise");
        assert_eq!(stories(&one), stories(&four), "{id}");
        assert!(one.stats.unique_states > 1000, "{id}: too small to split");
    }
}

/// A worker that hangs while its heartbeat runs on, in every family with a heartbeat
/// (a session lock's is its connection):
/// the safety story ends with the holder hung inside, still holding, and a client
/// waiting behind it; `eventually-free` breaks with a lasso whose stem has the hang and
/// after which nothing more can happen — nobody is ever granted again.
#[test]
fn a_hung_worker_whose_heartbeat_runs_on_holds_the_lock_for_ever() {
    use locklab_models::progress::{Kept, Promise};
    for (id, heartbeat) in [
        ("zk-hung-worker", "its pings go on"),
        ("etcd-hung-worker", "its keep-alives go on"),
        ("redis-reentrant-hung", "its watchdog renewals go on"),
        (
            "mysql-getlock-hung",
            "its connection, and the session its lock belongs to, stay open",
        ),
    ] {
        let r = run(id, Overrides::default());
        assert!(r.matches_expected, "{id}: {:?}", r.verdict);
        let s = r
            .stories
            .iter()
            .find(|s| s.property == Property::Liveness)
            .unwrap_or_else(|| panic!("{id}: no liveness story"));
        let hang = s
            .steps
            .iter()
            .find(|st| st.action.contains("worker hangs for good"))
            .unwrap_or_else(|| panic!("{id}: no hang in {:#?}", s.steps));
        assert!(
            hang.fault && hang.action.contains(heartbeat),
            "{id}: {}",
            hang.action
        );
        let last = &s.steps.last().expect("steps").state;
        assert!(
            last.iter()
                .any(|l| l.contains("IN CRITICAL SECTION") && l.contains("[HUNG]")),
            "{id}: {last:?}"
        );
        assert!(
            s.closing.contains("hung") && !s.closing.contains("crashed"),
            "{id}: {}",
            s.closing
        );
        let progress =
            locklab_models::catalog::progress(id, &Overrides::default(), Limits::default())
                .expect("a row")
                .expect("progress stated");
        let free = progress
            .iter()
            .find(|v| v.promise == Promise::EventuallyFree)
            .expect("eventually-free");
        let Kept::Violated { lasso } = &free.kept else {
            panic!("{id}: {:?}", free.kept);
        };
        assert!(lasso.cycle().is_empty(), "{id}: nothing more happens");
        let hung = lasso.steps[..lasso.stem]
            .iter()
            .find(|st| st.fault && st.action.contains("worker hangs"))
            .unwrap_or_else(|| panic!("{id}: the stem has no hang"));
        assert!(
            !hung.action.starts_with(&format!("c{}'s", lasso.client)),
            "{id}: the client waiting for ever is not the hung one: {}",
            hung.action
        );
    }
}

/// A non-reentrant lock taken again by its holder: the nested SET NX is refused by the
/// holder's own key, so it waits for itself, inside its section, until its own lease
/// runs out — and then another client is inside with it.
#[test]
fn a_nested_lock_on_a_non_reentrant_lock_waits_for_itself() {
    let r = run("redis-lua-reentry", Overrides::default());
    assert!(r.matches_expected, "{:?}", r.verdict);
    let t = story(&r, Property::Reentrancy);
    assert!(
        t.matches("SET lock c0 NX PX 2").count() >= 2 && t.contains("-> (nil)"),
        "the nested SET is refused: {t}"
    );
    assert!(t.contains("waits for the lock its own caller holds"), "{t}");
    let mx = story(&r, Property::MutualExclusion);
    assert!(
        mx.contains("time passes") && mx.matches("IN CRITICAL SECTION").count() >= 2,
        "{mx}"
    );
    assert!(mx.contains("nested lock() waited for its own key"), "{mx}");
}
