//! A user's protocol files are the catalog's own machinery: the Redis rows written as
//! protocol files reach the rows' verdicts and story lengths; the write-ups' code as
//! written is found broken (without any fault) or refused with the line to fix; and
//! `locklab check --protocol` says so with the right exit codes.
#![cfg(feature = "model-check")]

use std::path::PathBuf;

use locklab_models::catalog::{Overrides, Report, Verdict};
use locklab_models::check::Limits;
use locklab_models::protocol::{self, Described};
use locklab_models::registry::Property;

use crate::common::models;
use models::{inside, last_state, run, story};

use crate::common::cli;

fn file(name: &str) -> PathBuf {
    models::protocol_file(name)
}

fn load(name: &str) -> Described {
    models::load_protocol(name)
}

fn check(d: &Described, env: &str) -> Report {
    models::check_protocol(d, env)
}

/// Verdict and every story's length equal the row's.
fn same_as_row(name: &str, row: &str) {
    let mine = check(&load(name), row);
    let theirs = run(row);
    assert_eq!(mine.verdict, theirs.verdict, "{name} in {row}");
    let lengths = |r: &Report| -> Vec<(Property, usize)> {
        r.stories
            .iter()
            .map(|s| (s.property, s.steps.len()))
            .collect()
    };
    assert_eq!(lengths(&mine), lengths(&theirs), "{name} in {row}");
}

/// A protocol file's progress promises are its row's: the same verdicts, graph and
/// lassos as the built-in row, since it runs in the same model.
fn same_progress_as_row(name: &str, row: &str) {
    let d = load(name);
    let env = protocol::check::environment(&d, row).expect("a Redis row");
    let o = Overrides::default();
    let mine = protocol::progress_in(&d, &env, &o, Limits::default())
        .expect("bounds")
        .expect("stated");
    let theirs = locklab_models::catalog::progress(row, &o, Limits::default())
        .expect("row")
        .expect("stated");
    let said = |v: &[locklab_models::progress::Verdict]| -> Vec<String> {
        v.iter()
            .map(|v| {
                let g = v.graph.expect("built");
                let kept = match &v.kept {
                    locklab_models::progress::Kept::Violated { lasso } => lasso.shape(),
                    other => format!("{other:?}"),
                };
                format!("{} {} {} {kept}", v.promise, g.states, g.edges)
            })
            .collect()
    };
    assert_eq!(said(&mine), said(&theirs), "{name} in {row}");
}

#[test]
fn the_protocol_files_keep_their_rows_progress_promises() {
    same_progress_as_row("setnx-no-ttl.toml", "redis-setnx-no-ttl");
    same_progress_as_row("setnx-expire.toml", "redis-setnx-expire");
    same_progress_as_row("lua-compare-and-delete.toml", "redis-lua-pause");
    same_progress_as_row("redisson.toml", "redis-reentrant-pause");
}

#[test]
fn the_catalogs_redis_rows_as_protocol_files_reach_the_rows_verdicts() {
    same_as_row("setnx-no-ttl.toml", "redis-setnx-no-ttl");
    same_as_row("setnx-expire.toml", "redis-setnx-expire");
    same_as_row("get-then-del.toml", "redis-get-then-del");
    same_as_row("lua-compare-and-delete.toml", "redis-lua");
    same_as_row("lua-compare-and-delete.toml", "redis-lua-pause");
    same_as_row("lua-compare-and-delete.toml", "redis-failover");
    same_as_row("lua-fenced.toml", "redis-lua-fenced");
    same_as_row("redisson.toml", "redis-reentrant");
    same_as_row("redisson.toml", "redis-reentrant-pause");
}

#[test]
fn a_lua_release_keeps_one_holder_without_faults_and_loses_it_to_a_failover() {
    let d = load("lua-compare-and-delete.toml");
    assert_eq!(check(&d, "none").verdict, Verdict::Holds);
    let r = check(&d, "failover");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let text = story(&r, Property::MutualExclusion);
    assert!(text.contains("FAULT") && text.contains("promote"), "{text}");
    assert_eq!(
        inside(&last_state(&r, Property::MutualExclusion)),
        2,
        "{text}"
    );
}

/// A token step's reply goes to the resource: under the pause that puts two holders
/// inside, the stale one's write is refused and resource safety holds.
#[test]
fn a_fencing_token_from_a_step_keeps_the_resource_safe_under_a_pause() {
    let r = check(&load("lua-fenced.toml"), "pause");
    // Two holders inside, as the model says a pause allows; no update lost.
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion])
    );
    let text = story(&r, Property::MutualExclusion);
    assert!(text.contains("INCR lock:fence"), "{text}");
}

/// `{reply}` carries an acquire step's reply into the next step and the release: the
/// sequence number is the lock's value, so a paused holder's compare-and-delete spares
/// the next holder's lock, which the same scripts comparing a shared `{token}` delete.
#[test]
fn a_sequence_number_kept_by_reply_spares_the_next_holders_lock() {
    let r = check(&load("sequence-value.toml"), "pause");
    assert_eq!(
        r.verdict,
        Verdict::Violated(vec![Property::MutualExclusion]),
        "a pause still puts two inside, but nobody deletes another's lock"
    );
    let text = story(&r, Property::MutualExclusion);
    assert!(
        text.contains("INCR lock:seq") && text.contains("SET lock 1 NX PX"),
        "{text}"
    );

    // After a failover the sequence restarts on the promoted replica, which never saw
    // it: the next holder draws the paused one's number, and its release deletes it.
    let r = check(&load("sequence-value.toml"), "failover");
    assert!(
        matches!(&r.verdict, Verdict::Violated(ps) if ps.contains(&Property::NoForeignRelease)),
        "{:?}",
        r.verdict
    );
    let text = story(&r, Property::NoForeignRelease);
    assert!(text.contains("promotes"), "{text}");
    assert_eq!(
        text.matches("INCR lock:seq -> (integer) 1").count(),
        2,
        "{text}"
    );

    let shared = protocol::RedisProtocol::builder("compare-and-delete on a shared token")
        .token(protocol::TokenKind::ThreadId)
        .acquire(
            protocol::StepBuilder::send("SET {key} {token} NX PX {lease_ms}")
                .granted("OK")
                .busy("nil"),
        )
        .release(
            protocol::StepBuilder::script(
                &std::fs::read_to_string(file("compare-and-delete.lua")).expect("script"),
                &["{key}"],
                &["{token}"],
            )
            .released("1")
            .not_held("0"),
        )
        .build()
        .expect("valid");
    let r = check(&Described::Redis(shared), "pause");
    assert!(
        matches!(&r.verdict, Verdict::Violated(ps) if ps.contains(&Property::NoForeignRelease)),
        "{:?}",
        r.verdict
    );
}

/// Without `attempts`, each refused try takes a new sequence number: the search meets
/// new states for ever, stops *unknown* (exit 3), and says how to bound it.
#[test]
fn an_unbounded_retry_that_writes_is_unknown_with_the_bound_to_add() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(file("sequence-value.toml")).expect("file");
    let unbounded: String = text
        .lines()
        .filter(|l| !l.starts_with("attempts"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = dir.path().join("unbounded.toml");
    std::fs::write(&p, unbounded).expect("writes");
    std::fs::copy(
        file("compare-and-delete.lua"),
        dir.path().join("compare-and-delete.lua"),
    )
    .expect("copies");
    let path = p.to_str().unwrap_or_default();
    let o = cli::locklab(&["check", "--protocol", path, "none", "--max-states", "20000"]);
    cli::assert_exit(&o, 3);
    let out = cli::stdout(&o);
    assert!(
        out.contains("UNKNOWN") && out.contains("attempts = N"),
        "{out}"
    );
}

#[test]
fn set_if_present_as_written_refuses_a_free_lock_without_any_fault() {
    let r = check(&load("write-ups/setifpresent-finally.toml"), "none");
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::Liveness]));
    let text = story(&r, Property::Liveness);
    assert!(text.contains("XX"), "{text}");
    assert!(text.contains("held no key at all"), "{text}");
    assert!(!text.contains("FAULT"), "{text}");
}

#[test]
fn a_del_in_finally_after_a_refused_acquire_deletes_the_holders_lock_without_any_fault() {
    let r = check(&load("write-ups/setnx-finally.toml"), "none");
    assert!(
        matches!(&r.verdict, Verdict::Violated(ps) if ps.contains(&Property::NoForeignRelease)),
        "{:?}",
        r.verdict
    );
    let text = story(&r, Property::NoForeignRelease);
    assert!(
        text.contains("(nil)") && text.contains("DEL lock"),
        "{text}"
    );
    assert!(!text.contains("FAULT"), "{text}");
}

#[test]
fn the_reentrant_scripts_as_printed_are_refused_with_the_line_to_fix() {
    let e = protocol::load(&file("write-ups/reentrant-as-printed.toml")).expect_err("refused");
    assert!(e.at.ends_with("reentrant-lock.lua:3"), "{e}");
    assert!(
        e.message.contains("`exist`") && e.message.contains("did you mean `exists`"),
        "{e}"
    );
}

#[test]
fn check_protocol_prints_each_environment_and_exits_by_the_worst() {
    let f = file("lua-compare-and-delete.toml");
    let o = cli::locklab(&["check", "--protocol", f.to_str().unwrap_or_default()]);
    cli::assert_exit(&o, 1);
    let out = cli::stdout(&o);
    for env in [
        "@none: HOLDS",
        "@pause: VIOLATED",
        "@crash: HOLDS",
        "@failover: VIOLATED",
    ] {
        assert!(out.contains(env), "{env}: {out}");
    }
    let o = cli::locklab(&[
        "check",
        "--protocol",
        f.to_str().unwrap_or_default(),
        "none",
        "--format",
        "json",
    ]);
    let json = cli::json_after(&o, 0);
    assert_eq!(json["reports"][0]["verdict"], "ok", "{json}");
    // A user's protocol states no expectation, so its report claims none.
    assert!(json["reports"][0].get("expected").is_none(), "{json}");
    assert!(
        json["reports"][0].get("matches_expected").is_none(),
        "{json}"
    );
}

/// A protocol's own bug leads its output: what it breaks that the family's sound recipe
/// keeps in the same environment, and the step of its own the break rests on — before
/// the pause story every lease lock has.
#[test]
fn check_protocol_leads_with_what_is_particular_to_the_protocol() {
    let f = file("get-then-del.toml");
    let o = cli::locklab(&["check", "--protocol", f.to_str().unwrap_or_default()]);
    cli::assert_exit(&o, 1);
    let out = cli::stdout(&o);
    let lead = out.split("\n\n").next().unwrap_or_default();
    assert!(
        lead.starts_with(
            "What is particular to SET NX PX; GET, if mine DEL, held against redis-lua"
        ),
        "{out}"
    );
    assert!(
        lead.contains(
            "its own: no foreign release VIOLATED in pause, failover (redis-lua keeps it there)"
        ),
        "{lead}"
    );
    // The stale GET, named: the DEL of step 9 acted on the GET of step 3.
    assert!(
        lead.contains(r#"pause: c0's DEL lock -> (integer) 1 (step 9) acted on what its GET lock -> "c0" (step 3) saw"#),
        "{lead}"
    );
    assert!(
        lead.contains("as every lock of the family: mutual exclusion in pause, failover"),
        "{lead}"
    );
    // In each environment, its own break's story comes first.
    let pause = &out[out.find("DEL@pause").unwrap_or_default()..];
    let foreign = pause.find("Counterexample for no foreign release");
    let mutual = pause.find("Counterexample for mutual exclusion");
    assert!(foreign.is_some() && foreign < mutual, "{pause}");
    assert!(
        pause.contains("The protocol's own step: c0's DEL"),
        "{pause}"
    );
    // The sound recipe has nothing of its own.
    let sound = file("lua-compare-and-delete.toml");
    let o = cli::locklab(&["check", "--protocol", sound.to_str().unwrap_or_default()]);
    assert!(
        cli::stdout(&o).contains("nothing of its own"),
        "{}",
        cli::stdout(&o)
    );
    let o = cli::locklab(&[
        "check",
        "--protocol",
        f.to_str().unwrap_or_default(),
        "pause",
        "--format",
        "json",
    ]);
    let json = cli::json_after(&o, 1);
    let particular = &json["reports"][0]["particular"];
    assert_eq!(particular["reference"], "redis-lua", "{json}");
    assert_eq!(
        particular["own"],
        serde_json::json!(["no-foreign-release"]),
        "{json}"
    );
    assert_eq!(
        particular["shared"],
        serde_json::json!(["mutual-exclusion"]),
        "{json}"
    );
}

#[test]
fn a_bad_protocol_file_is_exit_2_naming_file_line_and_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("family = \"redis\"\n[[acquire]]\nsend = \"SET {key} {token} NX\"\ngranted = \"OK\"\nwhen = 1\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:5", "unknown field `when`"),
        ("family = \"redis\"\n[[acquire]]\nscript = \"missing.lua\"\ngranted = \"1\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:3", "missing.lua"),
        ("family = \"redis\"\n[[acquire]]\nlua = \"return redis.call('time')\"\ngranted = \"1\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml", "clock"),
        ("family = \"redis\"\n[[acquire]]\nsend = \"HSET {key} f 1\"\ngranted = \"1\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:2", "no command of the Redis spec"),
        ("family = \"redis\"\n[[acquire]]\nlua = \"if then\"\ngranted = \"1\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml", "syntax"),
        ("family = \"redis\"\nattempts = 0\n[[acquire]]\nsend = \"SET {key} {token} NX\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:2", "attempts = 0"),
        ("family = \"redis\"\n[[acquire]]\nsend = \"SET {key} {reply} NX\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n", "p.toml:2", "no step before this one goes on"),
        ("family = \"redis\"\n[[acquire]]\nsend = \"SET {key} {token} NX\"\ngranted = \"OK\"\n[[release]]\nsend = \"DEL {key}\"\n[[renew]]\nsend = \"PEXPIRE {key} 5\"\nrenewed = \"1\"\n[[renew]]\nsend = \"PEXPIRE {key} 5\"\nrenewed = \"1\"\n", "p.toml:10", "a renewal is one step"),
    ];
    for (text, at, what) in cases {
        let p = dir.path().join("p.toml");
        std::fs::write(&p, text).expect("writes");
        let o = cli::locklab(&["check", "--protocol", p.to_str().unwrap_or_default()]);
        cli::assert_exit(&o, 2);
        let err = cli::stderr(&o);
        assert!(err.contains(at) && err.contains(what), "{at} {what}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `--html` draws a protocol's story as a catalog row's: one page for one environment,
/// a page per environment beside the path for several; no lesson and no expected
/// verdict, since a user's protocol states none.
#[test]
fn check_protocol_draws_each_environments_page() {
    let f = file("lua-compare-and-delete.toml");
    let f = f.to_str().unwrap_or_default();
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("one.html");
    let o = cli::locklab(&[
        "check",
        "--protocol",
        f,
        "failover",
        "--html",
        one.to_str().unwrap_or_default(),
    ]);
    cli::assert_exit(&o, 1);
    let page = std::fs::read_to_string(&one).expect("page written");
    assert!(page.contains("promote to master"), "the failover is drawn");
    assert!(page.contains("c0 + c1 inside!"), "the overlap is drawn");
    assert!(!page.contains("expected:") && !page.contains("Lesson."));
    let all = dir.path().join("all.html");
    let o = cli::locklab(&[
        "check",
        "--protocol",
        f,
        "--html",
        all.to_str().unwrap_or_default(),
    ]);
    cli::assert_exit(&o, 1);
    for env in ["none", "pause", "crash", "failover"] {
        assert!(dir.path().join(format!("all-{env}.html")).exists(), "{env}");
    }
}

/// A renewal reads the reply its acquire kept: with the `INCR` number as the lock's
/// value, a renewal comparing `{reply}` finds its own value and extends the lease, so
/// time runs on past the first lease (a larger graph); the same renewal comparing
/// anything else is refused every time.
#[test]
fn a_renewal_reads_the_reply_its_acquire_kept() {
    let renew = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
    let with = |compared: &str| {
        let p = protocol::RedisProtocol::builder("sequence value, renewed")
            .attempts(2)
            .acquire(protocol::StepBuilder::send("INCR {key}:seq").next(">0"))
            .acquire(
                protocol::StepBuilder::send("SET {key} {reply} NX PX {lease_ms}")
                    .granted("OK")
                    .busy("nil"),
            )
            .release(protocol::StepBuilder::send("DEL {key}").released("any"))
            .renew(
                protocol::StepBuilder::script(renew, &["{key}"], &[compared, "{lease_ms}"])
                    .renewed("1")
                    .lost("0"),
            )
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        check(&Described::Redis(p), "none")
    };
    let (kept, other) = (with("{reply}"), with("x"));
    assert_eq!(kept.verdict, Verdict::Holds);
    assert!(
        kept.stats.unique_states > other.stats.unique_states
            && kept.stats.max_depth > other.stats.max_depth,
        "renewed: {:?}; refused: {:?}",
        kept.stats,
        other.stats
    );
}
