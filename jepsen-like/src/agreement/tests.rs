//! The cases of [`super`].

use super::*;
use locklab_models::catalog;
use locklab_traces::check::CheckReport;

#[test]
fn safety_properties_map_to_history_checks_and_the_rest_to_none() {
    assert_eq!(
        sources(Property::MutualExclusion),
        &[Property::MutualExclusion]
    );
    assert_eq!(
        sources(Property::NoForeignRelease),
        &[Property::NoForeignRelease]
    );
    assert!(sources(Property::ResourceSafety).contains(&Property::Fencing));
    assert!(sources(Property::Liveness).is_empty());
    assert!(sources(Property::Reentrancy).is_empty());
}

#[test]
fn expected_at_defaults_reads_the_catalog_row() {
    let s = catalog::find("redis-del-unconditional").expect("row");
    assert_eq!(
        expected_at_defaults(s),
        vec![Property::MutualExclusion, Property::NoForeignRelease]
    );
    let s = catalog::find("redis-lua").expect("row");
    assert!(expected_at_defaults(s).is_empty());
}

fn report(checks: &[(Property, Verdict)]) -> Report {
    Report {
        source: "test".into(),
        verdict: checks.iter().map(|c| c.1).max().unwrap_or(Verdict::Ok),
        checks: checks
            .iter()
            .map(|&(p, v)| CheckReport::new(p, v, format!("{} said so", p.name())))
            .collect(),
        findings: Vec::new(),
        warnings: Vec::new(),
        html: None,
    }
}

fn exercised() -> Exercised {
    Exercised {
        sections: 12,
        expects_sections: true,
        unfired: Vec::new(),
        model_bound: None,
    }
}

/// `redis-lua-pause`: the model breaks mutual exclusion and keeps no foreign
/// release. A lock that keeps both is safer: it passes "at least as safe" and
/// fails "agrees".
#[test]
fn a_safer_lock_is_at_least_as_safe_but_does_not_agree() {
    let s = catalog::find("redis-lua-pause").expect("row");
    let expected = expected_at_defaults(s);
    assert!(expected.contains(&Property::MutualExclusion));
    let safer = report(&[
        (Property::MutualExclusion, Verdict::Ok),
        (Property::NoForeignRelease, Verdict::Ok),
        (Property::ResourceSafety, Verdict::Ok),
    ]);
    let a = compare(s, &expected, &safer, exercised());
    assert_eq!(a.at_least_as_safe, Answer::Yes, "{a:#?}");
    assert_eq!(a.exact, Answer::No, "{a:#?}");
    assert_eq!(a.verdict, Verdict::Ok);
    assert!(
        a.standing().contains("keeps mutual exclusion"),
        "{}",
        a.standing()
    );

    let as_modelled = report(&[
        (Property::MutualExclusion, Verdict::Violation),
        (Property::NoForeignRelease, Verdict::Ok),
    ]);
    let a = compare(s, &expected, &as_modelled, exercised());
    assert_eq!((a.at_least_as_safe, a.exact), (Answer::Yes, Answer::Yes));
    assert_eq!(a.verdict, Verdict::Violation);

    let worse = report(&[
        (Property::MutualExclusion, Verdict::Violation),
        (Property::NoForeignRelease, Verdict::Violation),
    ]);
    let a = compare(s, &expected, &worse, exercised());
    assert_eq!((a.at_least_as_safe, a.exact), (Answer::No, Answer::No));
    assert!(
        a.standing().contains("breaks no foreign release"),
        "{}",
        a.standing()
    );
}

/// A run in which nobody entered, or whose fault never fired, answers nothing.
#[test]
fn a_run_that_tested_nothing_is_unknown_with_the_reason() {
    let s = catalog::find("redis-lua-pause").expect("row");
    let expected = expected_at_defaults(s);
    let quiet = report(&[(Property::NoForeignRelease, Verdict::Ok)]);
    let nothing = Exercised {
        sections: 0,
        expects_sections: true,
        unfired: vec![
            "client-pause any client: waited 5000 ms for a client enters, which never came".into(),
        ],
        model_bound: None,
    };
    let a = compare(s, &expected, &quiet, nothing);
    assert_eq!(a.at_least_as_safe, Answer::Unknown, "{a:#?}");
    assert_eq!(a.exact, Answer::Unknown);
    assert_eq!(a.verdict, Verdict::Unknown);
    let why = a.unknown_because.join("\n");
    assert!(why.contains("no client entered"), "{why}");
    assert!(why.contains("never fired"), "{why}");
    assert!(a.headline().contains("UNKNOWN"), "{}", a.headline());

    // A violation is proof, whatever else the run missed.
    let broke = report(&[(Property::NoForeignRelease, Verdict::Violation)]);
    let a = compare(
        s,
        &expected,
        &broke,
        Exercised {
            sections: 0,
            expects_sections: true,
            unfired: Vec::new(),
            model_bound: None,
        },
    );
    assert_eq!(a.at_least_as_safe, Answer::No);
    assert_eq!(a.verdict, Verdict::Violation);
}

/// A random run with more faults of a kind than the model was checked with: the
/// model keeping no foreign release within its bound does not make a run that breaks
/// it "less safe" — unknown, with the bound as the reason; what the model breaks
/// within its bound still counts.
#[test]
fn a_model_checked_with_fewer_faults_than_the_run_cannot_call_it_less_safe() {
    let s = catalog::find("redis-lua-pause").expect("row");
    let expected = expected_at_defaults(s);
    let bound = Exercised {
        model_bound: Some("the model was checked with at most 8 faults of each kind".into()),
        ..exercised()
    };
    let broke = report(&[
        (Property::MutualExclusion, Verdict::Violation),
        (Property::NoForeignRelease, Verdict::Violation),
    ]);
    let a = compare(s, &expected, &broke, bound.clone());
    assert_eq!(a.at_least_as_safe, Answer::Unknown, "{a:#?}");
    assert_eq!(a.exact, Answer::Unknown);
    assert_eq!(
        a.verdict,
        Verdict::Violation,
        "the violation itself is proof"
    );
    assert!(
        a.unknown_because.iter().any(|w| w.contains("at most 8")),
        "{a:#?}"
    );
    let me = a
        .rows
        .iter()
        .find(|r| r.property == Property::MutualExclusion);
    assert_eq!(
        me.and_then(|r| r.agrees),
        Some(true),
        "broken within the bound"
    );

    // A run that keeps everything is at least as safe whatever the bound; that it
    // agrees is what the bound leaves open.
    let kept = report(&[
        (Property::MutualExclusion, Verdict::Ok),
        (Property::NoForeignRelease, Verdict::Ok),
    ]);
    let a = compare(s, &expected, &kept, bound);
    assert_eq!(a.at_least_as_safe, Answer::Yes, "{a:#?}");
    assert_eq!(
        a.exact,
        Answer::No,
        "the model breaks mutual exclusion within 8 faults"
    );
}

/// A violation of a check no model property is compared with shows in the
/// verdict and the headline.
#[test]
fn a_violation_not_compared_is_in_the_verdict_and_the_headline() {
    let s = catalog::find("redlock").expect("row");
    let r = report(&[
        (Property::MutualExclusion, Verdict::Ok),
        (Property::LockLinearizability, Verdict::Violation),
        (Property::NoForeignRelease, Verdict::Ok),
        (Property::ResourceSafety, Verdict::Ok),
    ]);
    let a = compare(s, &expected_at_defaults(s), &r, exercised());
    assert_eq!(a.exact, Answer::Yes);
    assert_eq!(a.verdict, Verdict::Violation, "{a:#?}");
    assert_eq!(a.also_found.len(), 1);
    assert_eq!(a.also_found[0].check, Property::LockLinearizability);
    let line = a.headline();
    assert!(
        line.starts_with("VIOLATION (lock linearizability: a check not compared with the model for this scenario)  —  the properties compared agree with the model"),
        "{line}"
    );
}
