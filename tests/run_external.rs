//! External lock clients on real servers, through the external-client protocol: a
//! client that misbehaves (exits holding the lock, never answers, writes garbage,
//! answers requests it was not sent) is recorded and reported, never turned into a
//! false violation; a pause really stops the client's process, its own threads too;
//! kazoo's Lock agrees with the ZooKeeper model, and its requests are heard on the
//! wire as its own commands, from which a client that deletes another's node is proven
//! to release a lock not its own; and no client process outlives the run — not its
//! end, Ctrl-C, or a `kill -9` of the harness.
#![cfg(feature = "backends")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use locklab_jepsen::external::{ExternalClient, ProblemKind};
use locklab_jepsen::{RunOptions, RunReport};
use locklab_traces::check::{Property, Verdict};

use crate::common::harness;
use crate::common::run_check;
use crate::common::runs;
use run_check::check;

/// kazoo's Lock on ZooKeeper, and a client built on it that deletes any node.
#[path = "run_external/kazoo.rs"]
mod kazoo;

/// Debian's Python, where `ci/setup.sh` installs python3-redis and python3-kazoo.
const PYTHON: &str = "/usr/bin/python3";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn client(script: &str, args: &[&str]) -> ExternalClient {
    let mut command = vec![
        PYTHON.to_string(),
        root().join(script).display().to_string(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    ExternalClient::new(command).expect("a command")
}

fn misbehaving(mode: &str) -> ExternalClient {
    client("tests/clients/misbehaving.py", &[mode])
}

/// Runs `id` with `client` for `secs` seconds, keeping the history in `keep`, and
/// checks that none of the run's client processes is left.
fn run_with(id: &str, client: ExternalClient, secs: Option<u64>, keep: &Path) -> RunReport {
    let options = RunOptions {
        lock: Some(client.lock("test client")),
        duration: secs.map(Duration::from_secs),
        keep: Some(keep.to_path_buf()),
        ..RunOptions::new(id)
    };
    let r = runs::run_one(&options);
    let left = clients_of_run(keep);
    assert!(
        left.is_empty(),
        "client processes outlived the run: {left:?}"
    );
    r
}

/// Processes started as clients of harness process `pid` (and anything they started),
/// by the variable every client inherits.
fn clients_of(pid: u32) -> Vec<String> {
    clients_marked(&format!("LOCKLAB_HARNESS_PID={pid}\0"))
}

/// Processes started as clients of the run in `dir` (and anything they started): runs
/// of this process side by side are told apart by their directories.
fn clients_of_run(dir: &Path) -> Vec<String> {
    clients_marked(&format!("LOCKLAB_RUN_DIR={}\0", dir.display()))
}

/// Processes whose environment holds `marker`, with their command lines.
fn clients_marked(marker: &str) -> Vec<String> {
    harness::processes(|proc| {
        let env = std::fs::read(proc.join("environ")).ok()?;
        String::from_utf8_lossy(&env).contains(marker).then(|| {
            let cmd = std::fs::read(proc.join("cmdline")).unwrap_or_default();
            format!(": {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
    })
}

fn problems(r: &RunReport, kind: ProblemKind) -> Vec<String> {
    r.client_problems
        .iter()
        .filter(|p| p.problem == kind)
        .map(|p| format!("{}: {}", p.client, p.detail))
        .collect()
}

fn history_lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("history.jsonl"))
        .expect("the history")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect()
}

fn no_violation(r: &RunReport) {
    for c in &r.report.checks {
        assert_ne!(
            c.verdict,
            Verdict::Violation,
            "{}: {}",
            c.property.name(),
            c.summary
        );
    }
    // Never a disagreement it has not proven; a run whose sections never began is
    // unknown, with the reason, not "agrees".
    assert_ne!(
        r.agreement.exact,
        locklab_jepsen::agreement::Answer::No,
        "{:#?}",
        r.agreement
    );
}

#[test]
fn a_client_that_exits_holding_the_lock_is_a_crash_not_a_violation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run_with(
        "redis-lua",
        misbehaving("exit-after-grant"),
        Some(3),
        dir.path(),
    );
    no_violation(&r);
    // Each grant kills its holder, and the next waits out the dead holder's 2 s lease:
    // in 3 s two clients get one.
    let exited = problems(&r, ProblemKind::Exited);
    assert!(
        exited.len() >= 2,
        "each client exits after its first grant: {exited:?}"
    );
    assert!(
        exited
            .iter()
            .all(|e| e.contains("exit status: 7") && e.contains("exiting on purpose")),
        "the exit status and the last of stderr: {exited:?}"
    );
    // The workload hears of it as a crash of that client, and the others go on once
    // the dead holder's lease has run out.
    let events = history_lines(dir.path());
    let crashes = events
        .iter()
        .filter(|e| e["value"]["fault"] == "client-crash")
        .count();
    assert_eq!(crashes, exited.len());
    let grants = events
        .iter()
        .filter(|e| e["op"] == "acquire" && e["phase"] == "ok")
        .count();
    assert!(
        grants >= 2,
        "the lock is granted again after a crash: {grants}"
    );
}

#[test]
fn a_client_that_never_answers_gives_unknown_operations_not_violations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut hung = misbehaving("hang");
    hung.reply_timeout = Duration::from_millis(800);
    let r = run_with("redis-lua", hung, Some(2), dir.path());
    no_violation(&r);
    // Nobody was ever granted: the run tested nothing, and says so.
    assert_eq!(
        r.agreement.exact,
        locklab_jepsen::agreement::Answer::Unknown
    );
    assert!(
        r.agreement
            .unknown_because
            .iter()
            .any(|w| w.contains("no client entered")),
        "{:#?}",
        r.agreement
    );
    let timeouts = problems(&r, ProblemKind::Timeout);
    assert!(!timeouts.is_empty(), "{:?}", r.client_problems);
    assert!(timeouts[0].contains("acquire request"), "{timeouts:?}");
    let infos = history_lines(dir.path())
        .iter()
        .filter(|e| e["op"] == "acquire" && e["phase"] == "info")
        .count();
    assert!(
        infos >= 4,
        "each unanswered acquire is an info operation: {infos}"
    );
}

#[test]
fn garbage_on_stdout_is_recorded_and_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut garbled = misbehaving("garbage");
    garbled.reply_timeout = Duration::from_millis(800);
    let r = run_with("redis-lua", garbled, Some(2), dir.path());
    no_violation(&r);
    let garbage = problems(&r, ProblemKind::NotJson);
    assert!(
        garbage.iter().any(|g| g.contains("this is not JSON")),
        "{:?}",
        r.client_problems
    );
    assert!(!problems(&r, ProblemKind::Timeout).is_empty());
}

/// Replies to requests that were never sent, second replies and unreadable ones are
/// recorded and left out of the history: the run is the same as with a correct client.
#[test]
fn replies_to_requests_never_sent_are_recorded_and_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run_with("redis-lua", misbehaving("chatty"), Some(2), dir.path());
    no_violation(&r);
    assert_eq!(r.agreement.verdict, Verdict::Ok);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Ok);
    for kind in [
        ProblemKind::Unsolicited,
        ProblemKind::Duplicate,
        ProblemKind::Malformed,
    ] {
        assert!(
            !problems(&r, kind).is_empty(),
            "{kind:?}: {:?}",
            r.client_problems
        );
    }
    assert!(problems(&r, ProblemKind::Unsolicited)[0].contains("never sent"));
    // Each kind is recorded a bounded number of times per client, then counted.
    let recorded = history_lines(dir.path())
        .iter()
        .filter(|e| e["value"]["problem"] == "duplicate" && e["value"]["target"] == "c0")
        .count();
    assert!((1..=11).contains(&recorded), "{recorded}");
}

/// A pause is a SIGSTOP of the client's process group: a thread of the client's own
/// that writes a tick every 20 ms falls silent for as long as the pause.
#[test]
fn a_pause_stops_the_client_process_and_its_own_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run_with("redis-lua-pause", misbehaving("ticking"), None, dir.path());
    assert!(r.agreement.agrees(), "{:#?}", r.agreement);
    assert_eq!(check(&r, Property::MutualExclusion), Verdict::Violation);
    let paused: Vec<String> = history_lines(dir.path())
        .iter()
        .filter(|e| e["value"]["fault"] == "client-pause" && e["note"].is_string())
        .filter_map(|e| e["value"]["target"].as_str().map(String::from))
        .collect();
    assert!(!paused.is_empty(), "the nemesis paused a client");
    for c in paused {
        let stderr = std::fs::read_to_string(dir.path().join(format!("clients/{c}.stderr")))
            .expect("the client's stderr");
        let ticks: Vec<f64> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("tick ")?.parse().ok())
            .collect();
        let longest = ticks.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        assert!(
            longest >= 1.3,
            "{c} was stopped 1.5 s, yet its ticks never paused longer than {longest:.3} s"
        );
    }
}

/// A grandchild the client started in its process group dies with the run.
#[test]
fn the_clients_whole_process_group_dies_with_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run_with("redis-lua", misbehaving("fork"), Some(2), dir.path());
    no_violation(&r);
}

/// Starts `locklab run redis-lua` with forking clients and waits until it records.
fn start_harness(keep: &Path) -> std::process::Child {
    let keep_arg = keep.display().to_string();
    let script = root()
        .join("tests/clients/misbehaving.py")
        .display()
        .to_string();
    harness::start_recording(
        &[
            "run",
            "redis-lua",
            "--duration",
            "30",
            "--out",
            &keep_arg,
            "--client",
            PYTHON,
            &script,
            "fork",
        ],
        keep,
        20,
    )
}

fn wait_gone(pid: u32) -> Vec<String> {
    harness::wait_gone(|| clients_of(pid))
}

#[test]
fn ctrl_c_kills_every_client_process_group() {
    // A harness of its own, told apart by its process id: one run's share.
    let _share = runs::beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = start_harness(dir.path());
    let pid = child.id();
    // Four clients and their four grandchildren.
    assert_eq!(clients_of(pid).len(), 8, "{:?}", clients_of(pid));
    harness::interrupt(&mut child);
    let left = wait_gone(pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `kill -9` of the harness: the kernel kills each client it started
/// (`PR_SET_PDEATHSIG`). A grandchild in the client's group is the client's to stop:
/// nothing of the harness runs any more to kill it.
#[test]
fn a_killed_harness_leaves_no_client() {
    // A harness of its own, told apart by its process id: one run's share.
    let _share = runs::beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = start_harness(dir.path());
    let pid = child.id();
    child.kill().expect("kill -9");
    let _ = child.wait();
    let left = harness::wait_gone(|| {
        clients_of(pid)
            .into_iter()
            .filter(|p| p.contains("misbehaving.py"))
            .collect()
    });
    assert!(left.is_empty(), "clients outlived the harness: {left:?}");
    // The grandchildren (sleep 600) are orphans now; this test ends them.
    for p in clients_of(pid) {
        if let Some(raw) = p
            .split(':')
            .next()
            .and_then(|s| s.parse::<libc::pid_t>().ok())
        {
            // SAFETY: kill(2) on processes this test started through the harness.
            unsafe {
                libc::kill(raw, libc::SIGKILL);
            }
        }
    }
}

fn random(spec: &str) -> Option<locklab_jepsen::random::RandomNemesis> {
    Some(locklab_jepsen::random::RandomNemesis::parse(spec).expect("a nemesis spec"))
}

/// No plan scripts a pause here (`redis-lua` has no fault): the random nemesis draws
/// pauses and crashes, the broken DEL (no owner check) releases another client's lock
/// after a pause past its lease, and the shrinker cuts the schedule down to one pause
/// it saw break again — printed as a plan, its replay's history kept.
#[test]
fn a_random_nemesis_finds_the_broken_del_and_shrinks_it_to_one_pause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = RunOptions {
        lock: Some(client("examples/broken-del/lock_client.py", &[]).lock("plain DEL")),
        duration: Some(Duration::from_secs(15)),
        keep: Some(dir.path().to_path_buf()),
        random: random("random"),
        ..RunOptions::new("redis-lua")
    };
    let r = runs::run_one(&options);
    let n = r
        .nemesis
        .as_ref()
        .expect("a random run reports its nemesis");
    assert_eq!(n.kinds, ["pause", "crash"]);
    assert!(n.faults >= 1 && n.model_faults.contains("pause="), "{n:?}");
    assert!(
        n.broken.iter().any(|b| b == "no foreign release"),
        "{n:?}\n{:#?}",
        r.agreement
    );
    // The recipe's model with the same faults keeps its owner check: the client is
    // less safe than the row's protocol, which a gate fails on.
    assert_eq!(
        r.agreement.at_least_as_safe,
        locklab_jepsen::agreement::Answer::No
    );
    assert!(
        n.active.iter().any(|a| a.starts_with("client-pause c")),
        "the pause that broke it is named: {n:?}"
    );
    let s = n.shrunk.as_ref().expect("a violation is shrunk");
    assert!(s.reproduced, "{s:?}");
    assert_eq!(s.plan.len(), 1, "{s:?}");
    let ms: u64 = s.plan[0]
        .rsplit("for ")
        .next()
        .and_then(|m| m.trim_end_matches(" ms").parse().ok())
        .unwrap_or(0);
    assert!(
        s.plan[0].starts_with("at 0.50 s: client-pause any client") && ms > 2_000,
        "one pause past the 2 s lease: {s:?}"
    );
    assert!(
        s.violated.iter().any(|v| v == "no foreign release"),
        "{s:?}"
    );
    assert!(s.replays <= locklab_jepsen::random::DEFAULT_SHRINK_RUNS);
    let kept = dir.path().join(format!("shrink-{}", s.replays));
    assert!(
        kept.join("history.jsonl").is_file(),
        "each replay's history is kept beside the run's: {}",
        kept.display()
    );
}
