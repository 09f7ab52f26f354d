//! Holds a real run's checked history against the model's expected verdict for the
//! same catalog id, property by property. A property the history cannot speak to
//! (liveness, reentrancy) is listed as not compared, never guessed.

use locklab_models::catalog::{Expected, Scenario};
use locklab_models::registry::Property;
use locklab_traces::check::{Property as Check, Report, Verdict};
use serde::Serialize;

/// One model property, as the model expects it and as the run saw it.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The model's property.
    pub property: Property,
    /// Whether the model expects it violated.
    pub model_violated: bool,
    /// What the history showed (`None`: the history cannot tell).
    pub observed: Option<Verdict>,
    /// Whether the two agree (`None`: not compared, or unknown).
    pub agrees: Option<bool>,
    /// The history checks this row was read from.
    pub from: Vec<&'static str>,
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    /// Per property.
    pub rows: Vec<Row>,
    /// The run's verdict on the scenario's properties: violation if any compared
    /// property was violated, unknown if any was unknown, else ok.
    pub verdict: Verdict,
    /// Whether every compared property agrees with the model (false on any
    /// disagreement; an unknown is not a disagreement).
    pub agrees: bool,
}

/// The history checks that speak to a model property. The traces crate checks
/// histories, not models, so its properties are a different set (three of its checks
/// together stand for the model's resource safety); this is the one mapping.
fn sources(property: Property) -> &'static [Check] {
    match property {
        Property::MutualExclusion => &[Check::MutualExclusion],
        Property::NoForeignRelease => &[Check::NoForeignRelease],
        Property::ResourceSafety => &[
            Check::ResourceLinearizability,
            Check::ResourceSafety,
            Check::Fencing,
        ],
        // A finite history cannot show a lock that is never freed, nor count holds.
        Property::Liveness | Property::Reentrancy => &[],
    }
}

/// The properties the catalog expects violated at the scenario's default bounds.
pub fn expected_at_defaults(scenario: &Scenario) -> Vec<Property> {
    match scenario.expected {
        Expected::Holds => Vec::new(),
        Expected::Violates(p) => p.to_vec(),
    }
}

/// Compares `report` with the model's verdict for `scenario`: `expected_violated` are
/// the properties the model violates at the bounds the run used.
pub fn compare(scenario: &Scenario, expected_violated: &[Property], report: &Report) -> Agreement {
    let mut rows = Vec::new();
    for &property in scenario.properties {
        let model_violated = expected_violated.contains(&property);
        let wanted = sources(property);
        let found: Vec<_> = report
            .checks
            .iter()
            .filter(|c| wanted.contains(&c.property))
            .collect();
        let observed = if wanted.is_empty() {
            None
        } else if found.is_empty() {
            // Nothing to judge it by: no successful release means no foreign release;
            // any other missing check means the run did not exercise the property.
            if wanted == [Check::NoForeignRelease] {
                Some(Verdict::Ok)
            } else {
                Some(Verdict::Unknown)
            }
        } else {
            found.iter().map(|c| c.verdict).max()
        };
        let agrees = match observed {
            Some(Verdict::Ok) => Some(!model_violated),
            Some(Verdict::Violation) => Some(model_violated),
            _ => None,
        };
        rows.push(Row {
            property,
            model_violated,
            observed,
            agrees,
            from: found.iter().map(|c| c.property.name()).collect(),
        });
    }
    let compared = rows.iter().filter_map(|r| r.observed);
    let verdict = compared.max().unwrap_or(Verdict::Unknown);
    let agrees = rows.iter().all(|r| r.agrees != Some(false));
    Agreement {
        rows,
        verdict,
        agrees,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_models::catalog;

    #[test]
    fn safety_properties_map_to_history_checks_and_the_rest_to_none() {
        assert_eq!(
            sources(Property::MutualExclusion),
            &[Check::MutualExclusion]
        );
        assert_eq!(
            sources(Property::NoForeignRelease),
            &[Check::NoForeignRelease]
        );
        assert!(sources(Property::ResourceSafety).contains(&Check::Fencing));
        assert!(sources(Property::Liveness).is_empty());
        assert!(sources(Property::Reentrancy).is_empty());
    }

    #[test]
    fn expected_at_defaults_reads_the_catalog_row() {
        let s = catalog::find("redis-del-unconditional").expect("row");
        assert_eq!(
            expected_at_defaults(&s),
            vec![Property::MutualExclusion, Property::NoForeignRelease]
        );
        let s = catalog::find("redis-lua").expect("row");
        assert!(expected_at_defaults(&s).is_empty());
    }
}
