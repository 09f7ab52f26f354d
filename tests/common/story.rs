//! The model tests' reading of a counterexample.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use locklab_models::catalog::Report;
use locklab_models::registry::Property;

/// The story of `property` as text: each step's action (with `FAULT`) and its state,
/// then why it broke.
pub fn story(r: &Report, property: Property) -> String {
    let s = r
        .stories
        .iter()
        .find(|s| s.property == property)
        .unwrap_or_else(|| panic!("{}: no story for {property}", r.id));
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

/// `a` occurs in `t` before `b`.
pub fn before(t: &str, a: &str, b: &str) -> bool {
    match (t.find(a), t.find(b)) {
        (Some(i), Some(j)) => i < j,
        _ => false,
    }
}
