//! The model tests' helpers: a catalog row checked, a family's rows, a variant of a row
//! searched directly, a path walked by hand from a model's initial state, and the story
//! of a counterexample read as text.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use std::fmt::Debug;

use locklab_models::catalog::{check, scenarios, Family, Overrides, Report, Verdict};
use locklab_models::check::{Limits, Narrate};
use locklab_models::checkable::{Checkable, Story};
use locklab_models::registry::{Fault, Property};
use locklab_models::scenario::Params;

/// The row `id` checked with `o`.
pub fn run_with(id: &str, o: Overrides) -> Report {
    check(id, &o, Limits::default(), &mut |_| {}).expect("known scenario")
}

/// The row `id` checked as the catalog has it.
pub fn run(id: &str) -> Report {
    run_with(id, Overrides::default())
}

/// The ids of `family`'s rows, in catalog order.
pub fn family_ids(family: Family) -> Vec<&'static str> {
    scenarios()
        .iter()
        .filter(|s| s.family == family)
        .map(|s| s.id.name())
        .collect()
}

/// Each row reaches the verdict the catalog expects.
pub fn each_reaches_its_verdict(ids: &[&str]) {
    for id in ids {
        let r = run(id);
        assert!(r.matches_expected, "{id}: {:?}", r.verdict);
    }
}

/// `family`'s rows are `ids`, in that order, and each reaches its verdict.
pub fn assert_family_rows(family: Family, ids: &[&str]) {
    assert_eq!(family_ids(family), ids);
    each_reaches_its_verdict(ids);
}

/// The stories of a model searched to the end (`what` names it when the search is cut
/// short).
pub fn stories(m: &impl Checkable, what: impl Debug) -> Vec<Story> {
    let told = m.tell(Limits::default(), &mut |_| {});
    assert!(told.complete, "{what:?}: search cut short");
    told.stories
}

/// The base parameters with one fault of kind `f`.
pub fn one(f: Fault) -> Params {
    Params::BASE.with_faults(&[(f, 1)])
}

/// Takes `actions` in order from the model's initial state, each enabled; the state and
/// how each step was told.
pub fn walk<M>(m: &M, actions: &[M::Action]) -> (M::State, Vec<String>)
where
    M: Narrate,
    M::State: Clone + std::hash::Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    let mut s = m.init_states().remove(0);
    let mut told = Vec::new();
    for a in actions {
        told.push(m.describe_action(&s, a));
        s = m
            .next_state(&s, a.clone())
            .unwrap_or_else(|| panic!("{a:?} not enabled in {s:#?}"));
    }
    (s, told)
}

/// A story as text: each step's action (with `FAULT`) and its state, then why it broke.
pub fn text(s: &Story) -> String {
    let mut text = String::new();
    for st in &s.steps {
        text.push_str(&format!(
            "{}{}\n{}\n",
            st.action,
            if st.fault { " FAULT" } else { "" },
            st.state.join("\n")
        ));
    }
    text + &s.closing
}

/// The story of `property` as text.
pub fn story(r: &Report, property: Property) -> String {
    let s = r
        .stories
        .iter()
        .find(|s| s.property == property)
        .unwrap_or_else(|| panic!("{}: no story for {property}", r.id));
    text(s)
}

/// The last step's state lines of the story of `property` (none: no story).
pub fn last_state(r: &Report, property: Property) -> Vec<String> {
    r.stories
        .iter()
        .find(|s| s.property == property)
        .and_then(|s| s.steps.last())
        .map(|s| s.state.clone())
        .unwrap_or_default()
}

/// How many clients the state lines show inside the critical section.
pub fn inside(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|l| l.contains("IN CRITICAL SECTION"))
        .count()
}

/// The last state of `r`'s mutual-exclusion story (told in `t`) has two clients inside,
/// and a line `marked` (the holder the fault struck).
pub fn assert_two_inside(r: &Report, t: &str, marked: impl Fn(&String) -> bool) {
    let last = last_state(r, Property::MutualExclusion);
    assert_eq!(inside(&last), 2, "{t}");
    assert!(last.iter().any(marked), "{t}");
}

/// `a` occurs in `t` before `b`.
pub fn before(t: &str, a: &str, b: &str) -> bool {
    match (t.find(a), t.find(b)) {
        (Some(i), Some(j)) => i < j,
        _ => false,
    }
}

/// For each pair, its first text occurs in the story `t` before its second.
pub fn assert_before(t: &str, pairs: &[(&str, &str)]) {
    for (a, b) in pairs {
        assert!(before(t, a, b), "{a:?} before {b:?}:\n{t}");
    }
}

/// A fenced row holds: paused, its holder's stale write goes through without the token
/// (`unfenced`: the resource-safety stories, the first telling the pause in each pair's
/// `order`), and with the token the lock still breaks (`fenced`: its one story); only
/// the resource is safe.
pub fn assert_fencing_saves_only_the_resource(
    row: &str,
    unfenced: &[Story],
    order: &[(&str, &str)],
    fenced: &[Story],
) {
    assert_eq!(run(row).verdict, Verdict::Holds);
    let t = text(&unfenced[0]);
    assert_eq!(unfenced[0].property, Property::ResourceSafety);
    assert_before(&t, order);
    assert!(
        t.contains("resource: counter=1 after 2 accepted writes"),
        "{t}"
    );
    assert_eq!(fenced.len(), 1);
}

/// A protocol file of `examples/protocols/`.
pub fn protocol_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/protocols")
        .join(name)
}

/// The protocol file `name`, loaded (a test's own file: it must load).
pub fn load_protocol(name: &str) -> locklab_models::protocol::Described {
    locklab_models::protocol::load(&protocol_file(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `d` checked in environment (or catalog row) `env` at its own bounds.
pub fn check_protocol(d: &locklab_models::protocol::Described, env: &str) -> Report {
    locklab_models::protocol::check(d, env, &Overrides::default(), Limits::default())
        .expect("known environment")
}
