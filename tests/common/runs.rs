//! A run of a row on real servers, side by side with other runs where its timing
//! survives it (each server is a host of its own, so runs never meet on a port), its
//! history kept and read back when a test reads it, and the agreement with the model
//! every run test asks of it.

// Each test module uses a part of this file.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use locklab_jepsen::family::Family;
use locklab_jepsen::plan::Plan;
use locklab_jepsen::runner::run_plan;
use locklab_jepsen::{run, RunOptions, RunReport};
use locklab_traces::check::Verdict;
use locklab_traces::format::History;

pub use super::machine::{alone, beside, side_by_side, Share};

/// The directories runs of this process are keeping their histories in.
static KEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// A directory of its own for a run of `id` with `seed` to keep its history in, held
/// until dropped: `<id>-seed-<seed>`, or `…-2`, `…-3` while another run of this process
/// keeps one there (two tests may run a row with one seed side by side, and a run that
/// emptied the other's directory had it check a history that was not its own).
struct KeptDir(PathBuf);

impl KeptDir {
    fn take(id: &str, seed: u64) -> KeptDir {
        let runs = Path::new(env!("CARGO_TARGET_TMPDIR")).join("runs");
        let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        let dir = (1..)
            .map(|n| match n {
                1 => runs.join(format!("{id}-seed-{seed}")),
                n => runs.join(format!("{id}-seed-{seed}-{n}")),
            })
            .find(|d| !kept.contains(d))
            .unwrap_or_else(|| runs.join(format!("{id}-seed-{seed}")));
        kept.insert(dir.clone());
        KeptDir(dir)
    }
}

impl Drop for KeptDir {
    fn drop(&mut self) {
        KEPT.lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
    }
}

/// Runs `options` on the part of the machine `_held` holds, for a test that looks at
/// what is left of the run before another may start.
pub fn run_holding(_held: &Share, options: &RunOptions) -> RunReport {
    let mut options = options.clone();
    let mut _kept = None;
    if options.keep.is_none() {
        // A run that fails a test once and then passes a hundred times is only
        // understood from its history: every run keeps its own (one directory per row
        // and seed, replaced by the next), named on stderr, which the test harness
        // shows for a failing test only.
        let dir = KeptDir::take(&options.id, options.seed);
        let _ = std::fs::remove_dir_all(&dir.0);
        if std::fs::create_dir_all(&dir.0).is_ok() {
            eprintln!("{}: history kept in {}", options.id, dir.0.display());
            options.keep = Some(dir.0.clone());
        }
        _kept = Some(dir);
    }
    run(&options, &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", options.id))
}

/// Runs `options` on one run's share of the machine.
pub fn run_one(options: &RunOptions) -> RunReport {
    run_holding(&beside(), options)
}

/// The run agrees with the model, and its verdict is known.
pub fn assert_agrees(r: &RunReport) {
    assert!(
        r.agreement.agrees() && r.agreement.verdict != Verdict::Unknown,
        "{}: run disagrees with the model or is unknown: {:#?}\n{:?}",
        r.id,
        r.agreement,
        r.timeline
    );
}

/// Runs `options`; the run must agree with the model.
pub fn agrees_with(options: &RunOptions) -> RunReport {
    let r = run_one(options);
    assert_agrees(&r);
    r
}

/// Runs row `id`; the run must agree with the model.
pub fn agrees(id: &str) -> RunReport {
    agrees_with(&RunOptions::new(id))
}

/// The history a run kept in `dir`.
pub fn kept_history(dir: &Path) -> History {
    locklab_traces::reader::read_path(&dir.join("history.jsonl")).expect("the kept history loads")
}

/// Runs `options`, keeping its history for the test to read.
pub fn run_kept(options: RunOptions) -> (RunReport, History) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let options = RunOptions {
        keep: Some(dir.path().to_path_buf()),
        ..options
    };
    (run_one(&options), kept_history(dir.path()))
}

/// Runs `plan` (a variant of a catalog row), keeping its history for the test to read.
pub fn plan_kept<F: Family>(plan: Plan<F>) -> (RunReport, History) {
    let id = plan.id.name();
    let _share = beside();
    let dir = tempfile::tempdir().expect("a temp dir");
    let options = RunOptions {
        keep: Some(dir.path().to_path_buf()),
        ..RunOptions::new(id)
    };
    let r = run_plan(plan, &options, &mut |_| {}).unwrap_or_else(|e| panic!("{id}: {e}"));
    (r, kept_history(dir.path()))
}

/// The run's grants followed request order, as the model's `fifo` says: agreement
/// within the run.
pub fn assert_grants_in_request_order(r: &RunReport) {
    let o = r
        .order
        .as_ref()
        .unwrap_or_else(|| panic!("{}: the grant order was not compared with the model", r.id));
    assert_eq!(
        (o.model, o.agrees),
        (
            locklab_jepsen::agreement::progress::ModelSays::Holds,
            locklab_jepsen::agreement::Answer::Yes
        ),
        "{}: {} / {}",
        r.id,
        o.observed,
        o.summary
    );
}

/// No client waited through more grants of others than a queue allows, as the
/// model's `starvation-free` says: agreement within the run (a queue passes a waiter
/// over once for each client ahead of it, never more).
pub fn assert_nobody_starved(r: &RunReport) {
    let s = r
        .starvation
        .as_ref()
        .unwrap_or_else(|| panic!("{}: starvation was not compared with the model", r.id));
    assert_eq!(
        (s.model, s.agrees),
        (
            locklab_jepsen::agreement::progress::ModelSays::Holds,
            locklab_jepsen::agreement::Answer::Yes
        ),
        "{}: {} / {}",
        r.id,
        s.observed,
        s.summary
    );
}

/// The model says a client of this retry loop may lose every race, and the run,
/// whatever its clients' luck, never contradicts it: a run can show a long wait, it
/// cannot show that nobody could starve.
pub fn assert_may_starve(r: &RunReport) {
    let s = r
        .starvation
        .as_ref()
        .unwrap_or_else(|| panic!("{}: starvation was not compared with the model", r.id));
    assert_eq!(
        s.model,
        locklab_jepsen::agreement::progress::ModelSays::Violated,
        "{}: {}",
        r.id,
        s.summary
    );
    assert_ne!(
        s.agrees,
        locklab_jepsen::agreement::Answer::No,
        "{}",
        s.summary
    );
    assert_eq!(
        s.agrees == locklab_jepsen::agreement::Answer::Yes,
        s.observed_past_a_queue,
        "{}",
        s.summary
    );
}

/// Row `id`, whose holder's worker hangs while its heartbeat runs on: the run agrees
/// with the model, and the lock stayed taken for the rest of the run — nobody granted
/// for four leases and more — as the model's lasso says it stays for ever.
pub fn stuck_behind_a_hung_holder(id: &str) -> (RunReport, History) {
    let (r, h) = run_kept(RunOptions::new(id));
    assert_agrees(&r);
    assert_stuck_as_the_model_says(&r, "client-hang");
    (r, h)
}

/// The run saw the lock stuck after its `fault` (`client-crash`, `client-hang`,
/// `lost-reply`), as the model's lasso says it can stay for ever: agreement within the
/// run's horizon.
pub fn assert_stuck_as_the_model_says(r: &RunReport, fault: &str) {
    let l = r
        .liveness
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no {fault} recorded", r.id));
    assert!(l.stuck && l.fault == fault, "{}: {}", r.id, l.summary);
    let p = r
        .progress
        .as_ref()
        .unwrap_or_else(|| panic!("{}: progress not compared", r.id));
    assert_eq!(
        (p.model, p.agrees),
        (
            locklab_jepsen::agreement::progress::ModelSays::Violated,
            locklab_jepsen::agreement::Answer::Yes
        ),
        "{}: {}",
        r.id,
        p.summary
    );
}

/// Row `id` under a random nemesis of leader changes only (`random:failover`, 20 s,
/// `seed`), its history kept: nothing the lock promises breaks, the run is as safe as
/// the model, and the model it is held against has one failover per leader change the
/// history records as `change` — each over (`end`) before the next began. Returns the
/// changes' targets (the leaders) and the history.
pub fn random_leader_changes(id: &str, change: &str, end: &str, seed: u64) -> Vec<String> {
    let options = RunOptions {
        duration: Some(std::time::Duration::from_secs(20)),
        random: Some(
            locklab_jepsen::random::RandomNemesis::parse("random:failover").expect("spec"),
        ),
        seed,
        ..RunOptions::new(id)
    };
    let (r, h) = run_kept(options);
    let n = assert_random_run_broke_nothing(&r);
    let steps: Vec<(String, String)> = h
        .events
        .iter()
        .filter(|(_, e)| e.op == locklab_traces::format::OpKind::Nemesis)
        .filter_map(|(_, e)| {
            let v = e.value_json()?;
            Some((
                v.get("fault")?.as_str()?.to_string(),
                v.get("target")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let changes: Vec<String> = steps
        .iter()
        .filter(|(f, _)| f == change)
        .map(|(_, t)| t.clone())
        .collect();
    assert!(!changes.is_empty(), "no {change} in 20 s: {steps:?}");
    assert_eq!(n.model_faults, format!("failover={}", changes.len()));
    // A change and its end alternate (an etcd churn ends in itself).
    if change != end {
        let kinds: Vec<&str> = steps.iter().map(|(f, _)| f.as_str()).collect();
        let paired: Vec<&str> = [change, end]
            .iter()
            .copied()
            .cycle()
            .take(kinds.len())
            .collect();
        assert_eq!(kinds, paired, "{steps:?}");
    }
    changes
}

/// A random run broke nothing its row's lock promises (so nothing was shrunk) and is at
/// least as safe as the model with the same faults; its nemesis report.
pub fn assert_random_run_broke_nothing(r: &RunReport) -> &locklab_jepsen::random::NemesisReport {
    let n = r
        .nemesis
        .as_ref()
        .expect("a random run reports its nemesis");
    assert!(n.broken.is_empty() && n.shrunk.is_none(), "{n:?}");
    assert_eq!(
        r.agreement.at_least_as_safe,
        locklab_jepsen::agreement::Answer::Yes,
        "{:#?}",
        r.agreement
    );
    n
}

/// The run's `n` lock servers were each a host of its own on port `port`, as every run
/// as root has them; when not, the failure says why no lab could be made here.
pub fn assert_on_hosts(r: &RunReport, port: u16, n: usize) {
    // The harness's own counter ("; resource …") stays on loopback.
    let servers = r.topology.split("; resource").next().unwrap_or_default();
    let why = match locklab_servers::net::Lab::available() {
        Ok(()) => String::new(),
        Err(e) => format!(" — {e}"),
    };
    assert!(
        servers.matches(&format!(":{port}")).count() == n
            && servers.contains("on a host of its own")
            && !servers.contains("127.0.0.1"),
        "{}: {n} server(s) on hosts of their own at :{port} expected, got {servers}{why}",
        r.id
    );
}
