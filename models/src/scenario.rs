//! What a catalog row is: its id and teaching text, the properties it checks and the
//! verdict it expects, its default bounds, and how it builds its model. Every family's
//! `catalog.rs` writes its rows with these types; the catalog only concatenates them.

use std::fmt::Debug;

use serde::Serialize;

use crate::checkable::Checkable;
use crate::registry::{Family, Fault, Property, ScenarioId, Verdict};

/// The verdict a scenario should reach at its default bounds; JSON writes it as a
/// search's verdict is written (`{"verdict": "violation", "violated": [...]}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// No violation within the bounds.
    Holds,
    /// Exactly these properties are violated.
    Violates(&'static [Property]),
}

impl Serialize for Expected {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Expected::Holds => verdict_fields(s, Verdict::Ok, &[]),
            Expected::Violates(p) => verdict_fields(s, Verdict::Violation, p),
        }
    }
}

impl schemars::JsonSchema for Expected {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Expected".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        verdict_schema(generator)
    }
}

/// The schema of [`verdict_fields`]: `violated` exactly when the verdict is a violation.
pub(crate) fn verdict_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let verdict = generator.subschema_for::<Verdict>();
    let property = generator.subschema_for::<Property>();
    schemars::json_schema!({
        "type": "object",
        "properties": {
            "verdict": verdict,
            "violated": { "type": "array", "items": property, "minItems": 1 },
        },
        "required": ["verdict"],
        "if": { "properties": { "verdict": { "const": "violation" } } },
        "then": { "required": ["violated"] },
        "else": { "not": { "required": ["violated"] } },
    })
}

/// A verdict as JSON writes it wherever it stands: `verdict`, and `violated` beside a
/// violation.
pub(crate) fn verdict_fields<S: serde::Serializer>(
    s: S,
    verdict: Verdict,
    violated: &[Property],
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    m.serialize_entry("verdict", &verdict)?;
    if verdict == Verdict::Violation {
        m.serialize_entry("violated", violated)?;
    }
    m.end()
}

/// Bounds a user may change on the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Params {
    /// Clients (buyers).
    pub clients: usize,
    /// Replicas behind the master (Redis failover scenarios).
    pub replicas: usize,
    /// Redlock nodes.
    pub nodes: usize,
    /// Lease in ticks.
    pub ttl: u64,
    /// Fault budgets; only faults of the scenario's family.
    pub faults: Vec<(Fault, u8)>,
}

impl Params {
    /// Two clients, a lease of two ticks, one node, no faults: the bounds most rows use.
    pub const BASE: Params = Params {
        clients: 2,
        replicas: 0,
        nodes: 0,
        ttl: 2,
        faults: Vec::new(),
    };

    /// These bounds with the given fault budgets.
    pub fn with_faults(self, faults: &[(Fault, u8)]) -> Params {
        Params {
            faults: faults.to_vec(),
            ..self
        }
    }

    /// The budget of one fault (0 when not listed).
    pub fn budget(&self, fault: Fault) -> u8 {
        self.faults
            .iter()
            .filter(|f| f.0 == fault)
            .map(|f| f.1)
            .sum()
    }
}

/// How a row makes its model: a family's typed configuration (protocol, options)
/// turned into a searchable model for the given bounds.
pub trait Build: Debug + Send + Sync {
    /// The model of `scenario` with `params`.
    fn build(&self, scenario: &Scenario, params: &Params) -> Box<dyn Checkable>;

    /// The model of `scenario` with `params` whose clock may run `tail` ticks past its
    /// horizon, faults over (see [`crate::progress`]), for the progress promises;
    /// `None` where the family does not state them yet.
    fn with_tail(
        &self,
        _scenario: &Scenario,
        _params: &Params,
        _tail: u64,
    ) -> Option<Box<dyn crate::progress::Judge>> {
        None
    }

    /// The model of `scenario` with `params` whose clients start over when done and
    /// whose clock runs for ever past its horizon, faults over
    /// ([`crate::kernel::repeat`]), for `starvation-free`; `None` where the family's
    /// model cannot yet, and starvation is judged with clients that lock once.
    fn repeating(
        &self,
        _scenario: &Scenario,
        _params: &Params,
    ) -> Option<Box<dyn crate::progress::Judge>> {
        None
    }

    /// The progress promises' verdicts on the model of `scenario` with `params`, its
    /// graph held to `limits` ([`crate::progress::judge_row`]), starvation too with
    /// clients that lock once where `only_once`; `None` where the family does not
    /// state them yet.
    fn progress(
        &self,
        scenario: &Scenario,
        params: &Params,
        limits: &crate::check::Limits,
        only_once: bool,
    ) -> Option<Vec<crate::progress::Verdict>> {
        let tail = crate::progress::tail(params.clients, params.ttl);
        let once = self.with_tail(scenario, params, tail)?;
        let again = (!only_once)
            .then(|| self.repeating(scenario, params))
            .flatten();
        Some(crate::progress::judge_row(
            once.as_ref(),
            again.as_deref(),
            limits,
        ))
    }
}

/// Which scenario: a catalog row, or a user's protocol file in one of its family's
/// environments. Written as its name (`redis-lua`, `my-lock@redis-lua`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowId {
    /// A catalog row.
    Catalog(ScenarioId),
    /// A protocol file in an environment: `NAME@ENV`.
    File(&'static str),
}

impl RowId {
    /// The id as users type it.
    pub const fn name(self) -> &'static str {
        match self {
            RowId::Catalog(id) => id.name(),
            RowId::File(name) => name,
        }
    }

    /// The catalog row, unless this is a protocol file's scenario.
    pub fn row(self) -> Option<ScenarioId> {
        match self {
            RowId::Catalog(id) => Some(id),
            RowId::File(_) => None,
        }
    }

    /// A protocol file's environment (what follows its `@`); `None` for a row.
    pub fn environment(self) -> Option<&'static str> {
        match self {
            RowId::Catalog(_) => None,
            RowId::File(name) => name.rsplit_once('@').map(|(_, env)| env),
        }
    }
}

impl From<ScenarioId> for RowId {
    fn from(id: ScenarioId) -> RowId {
        RowId::Catalog(id)
    }
}

impl PartialEq<&str> for RowId {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl std::fmt::Display for RowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RowId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for RowId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RowId".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

/// A catalog row.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Scenario {
    /// Its id: what users type, read once into the type ([`crate::catalog::find`]).
    pub id: RowId,
    /// The family whose model checks it.
    pub family: Family,
    /// The protocol in words.
    pub protocol: &'static str,
    /// The faults the checker may inject, in words (the budgets are in `defaults`).
    pub faults: &'static str,
    /// The properties checked.
    pub properties: &'static [Property],
    /// What a correct model finds.
    pub expected: Expected,
    /// Why it matters.
    pub lesson: &'static str,
    /// Default bounds.
    pub defaults: Params,
    /// How its model is built: the only way to get one, so an id without a row builds
    /// nothing.
    #[serde(skip)]
    pub model: &'static dyn Build,
}

impl Scenario {
    /// The model of this scenario with `params`.
    pub fn build(&self, params: &Params) -> Box<dyn Checkable> {
        self.model.build(self, params)
    }

    /// The progress promises' verdicts on this scenario's model with `params`, starvation
    /// with clients that lock once where `once` ([`Build::progress`]); `None` where its
    /// family does not state them yet.
    pub fn progress(
        &self,
        params: &Params,
        limits: &crate::check::Limits,
        once: bool,
    ) -> Option<Vec<crate::progress::Verdict>> {
        self.model.progress(self, params, limits, once)
    }
}
