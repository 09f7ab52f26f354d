//! The stores for state spaces past memory, held against the full store on every
//! catalog row: hash compaction finds the same states, verdicts and stories but never
//! says "holds"; the bitstate sweep finds the same violations, proven, if not always
//! by the shortest story, and never says "holds" either.
#![cfg(feature = "model-check")]

use locklab_models::catalog::{check, scenarios, Overrides, Report, Verdict};
use locklab_models::check::{Limits, Store};

use crate::common::cli;
use cli::{json_after, locklab, stdout};

fn search(id: &str, store: Store) -> Report {
    let limits = Limits {
        threads: 1,
        store,
        ..Limits::default()
    };
    check(id, &Overrides::default(), limits, &mut |_| {}).expect("a catalog row")
}

fn lengths(r: &Report) -> Vec<(String, usize)> {
    r.stories
        .iter()
        .map(|s| (s.property.to_string(), s.steps.len()))
        .collect()
}

#[test]
fn hash_compaction_finds_what_the_full_store_finds_and_never_says_holds() {
    for s in scenarios() {
        let full = search(s.id.name(), Store::Full);
        let compact = search(s.id.name(), Store::HashCompact);
        // A few million states at most: no two share 64 bits here, so the same states
        // are found in the same order, and the same stories told.
        assert_eq!(
            compact.stats.unique_states, full.stats.unique_states,
            "{}",
            s.id
        );
        let p = compact
            .collision_bound
            .expect("a table store bounds its misses");
        assert!(p > 0.0 && p < 1e-6, "{}: {p}", s.id);
        match &full.verdict {
            Verdict::Holds => {
                assert_eq!(compact.verdict, Verdict::Unknown, "{}", s.id);
                assert_eq!(compact.stopped_by, None, "{}: no limit struck", s.id);
            }
            v => {
                assert_eq!(&compact.verdict, v, "{}", s.id);
                let told = |r: &Report| serde_json::to_string(&r.stories).expect("stories");
                assert_eq!(told(&compact), told(&full), "{}", s.id);
            }
        }
    }
}

#[test]
fn the_bitstate_sweep_proves_the_violations_it_finds_and_never_says_holds() {
    for s in scenarios() {
        let full = search(s.id.name(), Store::Full);
        let swept = search(s.id.name(), Store::Bitstate { log2_bits: 26 });
        assert_eq!(swept.collision_bound, None, "{}", s.id);
        match &full.verdict {
            Verdict::Holds => {
                assert_eq!(swept.verdict, Verdict::Unknown, "{}", s.id);
                // Both went through the whole graph; the sweep counts a state whose
                // bits were all set already as seen.
                assert!(
                    swept.stats.unique_states <= full.stats.unique_states,
                    "{}",
                    s.id
                );
            }
            v => {
                // 2^26 bits for at most a few million states: none skipped that leads
                // to a violation, and depth first the stories are as long or longer.
                assert_eq!(&swept.verdict, v, "{}", s.id);
                assert!(swept.stories.iter().all(|t| !t.shortest), "{}", s.id);
                assert!(swept.stories[0].to_string().contains("depth first"));
                for ((p, deep), (q, shortest)) in lengths(&swept).iter().zip(lengths(&full)) {
                    assert_eq!(p, &q, "{}", s.id);
                    assert!(*deep >= shortest, "{}: {p} {deep} < {shortest}", s.id);
                }
            }
        }
    }
}

fn cli(args: &[&str]) -> (i32, String) {
    let o = locklab(args);
    (o.status.code().unwrap_or(-1), stdout(&o))
}

/// What each store answers on the command line: a row that holds is unknown (exit 3)
/// with the chance of a miss, or with the sweep's hash factor; a violation is still a
/// violation (exit 1), and JSON names the store.
#[test]
fn the_command_line_says_what_each_store_proves() {
    let holding = scenarios()
        .iter()
        .find(|s| search(s.id.name(), Store::Full).verdict == Verdict::Holds)
        .expect("a row that holds")
        .id
        .name();
    let (code, out) = cli(&["check", holding]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cli(&["check", holding, "--store", "hash-compact"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("UNKNOWN: no violation in")
            && out.contains("a fingerprint collision could have hidden one, probability ≤"),
        "{out}"
    );
    let (code, out) = cli(&["check", holding, "--store", "bitstate"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("bitstate (2^30 bits)") && out.contains("not a proof"),
        "{out}"
    );
    let compact = ["check", "redis-failover", "--store", "hash-compact"];
    let json = json_after(&locklab(&[&compact[..], &["--format", "json"]].concat()), 1);
    assert_eq!(json["store"], "hash-compact", "{json}");
    assert_eq!(json["verdict"], "violation", "{json}");
    let (code, out) = cli(&[
        "check",
        "redis-failover",
        "--store",
        "bitstate",
        "--bitstate-bits",
        "24",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not always the shortest"), "{out}");
    let (code, _) = cli(&["check", "redis-failover", "--store", "bits"]);
    assert_eq!(code, 2);
    let (code, _) = cli(&["check", "redis-failover", "--bitstate-bits", "60"]);
    assert_eq!(code, 2);
}
