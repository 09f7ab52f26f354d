//! The answer for one scenario: the told search held against the row's expectation.

use serde::Serialize;

use crate::check::{Stats, Stop, Store};
use crate::checkable::{Story, Told};
use crate::registry::Property;
use crate::scenario::{Expected, Params, Scenario};

/// What the search found; JSON writes it as the shared vocabulary, `"verdict"` (`ok`,
/// `violation`, `unknown`) with `"violated"` listing the properties of a violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No violation within the bounds (exhaustive, in a full store).
    Holds,
    /// These properties have counterexamples.
    Violated(Vec<Property>),
    /// A limit stopped the search first, or it ran in a store that may have missed
    /// states ([`Store::exact`]).
    Unknown,
}

impl Verdict {
    /// The verdict in the shared vocabulary.
    pub fn word(&self) -> crate::registry::Verdict {
        match self {
            Verdict::Holds => crate::registry::Verdict::Ok,
            Verdict::Violated(_) => crate::registry::Verdict::Violation,
            Verdict::Unknown => crate::registry::Verdict::Unknown,
        }
    }

    /// The violated properties (none unless a violation).
    pub fn violated(&self) -> &[Property] {
        match self {
            Verdict::Violated(p) => p,
            _ => &[],
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::scenario::verdict_fields(s, self.word(), self.violated())
    }
}

impl schemars::JsonSchema for Verdict {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SearchVerdict".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::scenario::verdict_schema(generator)
    }
}

impl Report {
    /// The answer over every property asked: the safety search's and, when they were
    /// judged, each progress promise's — a violation if any is violated, else unknown
    /// if any is undecided, else ok. The headline, the JSON `verdict` and the exit
    /// code of every command say this one answer.
    pub fn answer(
        &self,
        progress: Option<&[crate::progress::Verdict]>,
    ) -> crate::registry::Verdict {
        progress
            .unwrap_or_default()
            .iter()
            .map(|v| v.kept.word())
            .fold(self.verdict.word(), crate::registry::Verdict::max)
    }
}

/// The answer for one scenario.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The scenario id.
    pub id: &'static str,
    /// The bounds used.
    pub params: Params,
    /// `ok` only if the search was exhaustive; a `violation` lists in `violated` the
    /// properties that have a story in `stories`; otherwise `unknown`.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What the catalog expects at default bounds.
    pub expected: Expected,
    /// Whether `verdict` is `expected`.
    pub matches_expected: bool,
    /// The search's counters.
    pub stats: Stats,
    /// The limit that stopped the search before it explored everything, if one did
    /// (with a violation found, the other properties are then unknown).
    pub stopped_by: Option<Stop>,
    /// One shortest story per violated property.
    pub stories: Vec<Story>,
    /// How the search stored its states (`full` unless `--store` said otherwise).
    pub store: Store,
    /// With a table store, an upper bound on the chance that a fingerprint collision
    /// hid a state from the search; none for a bitstate sweep.
    pub collision_bound: Option<f64>,
}

/// The report for `s` searched with `p`.
pub fn report(s: &Scenario, p: Params, told: Told) -> Report {
    let Told {
        complete,
        stopped,
        stats,
        stories,
        store,
        collision_bound,
    } = told;
    let verdict = if !stories.is_empty() {
        // A violation found is proven by its path, whether or not the search finished.
        Verdict::Violated(stories.iter().map(|s| s.property).collect())
    } else if complete && store.exact() {
        Verdict::Holds
    } else {
        Verdict::Unknown
    };
    Report {
        id: s.id.name(),
        params: p,
        matches_expected: matches(&verdict, s.expected),
        verdict,
        expected: s.expected,
        stats,
        stopped_by: stopped,
        stories,
        store,
        collision_bound,
    }
}

fn matches(verdict: &Verdict, expected: Expected) -> bool {
    match (verdict, expected) {
        (Verdict::Holds, Expected::Holds) => true,
        (Verdict::Violated(v), Expected::Violates(e)) => {
            let mut a = v.clone();
            let mut b = e.to_vec();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        }
        _ => false,
    }
}
