//! The model tests' reading of a counterexample.

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
