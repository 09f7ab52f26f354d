//! A described protocol explored like a catalog row: in one of its family's fault
//! environments, or in a catalog row's own (its bounds, faults and properties), so a
//! protocol file of a row's protocol can be held against the row.

use crate::catalog::{self, CatalogError, Overrides, Report};
use crate::check::{Limits, Stats};
use crate::registry::{Fault, Property};
use crate::scenario::{Build, Expected, Params, RowId, Scenario};

use super::Described;

/// A setting a protocol is checked in: bounds, fault budgets and properties.
#[derive(Clone, Debug)]
pub struct Environment {
    /// Its name (`pause`), or the catalog row it is taken from.
    pub name: String,
    /// The faults in words.
    pub faults: String,
    /// The bounds and fault budgets.
    pub params: Params,
    /// The properties checked.
    pub properties: Vec<Property>,
}

/// The environment named `name`: one of [`Described::environments`], or a catalog row of `d`'s
/// family (its bounds, faults and properties).
pub fn environment(d: &Described, name: &str) -> Result<Environment, CatalogError> {
    let environments = d.environments();
    if let Some(e) = environments.iter().find(|e| e.name == name) {
        return Ok(e.clone());
    }
    let row = catalog::find(name).map_err(|_| {
        let names: Vec<&str> = environments.iter().map(|e| e.name.as_str()).collect();
        let rows = catalog::scenarios()
            .iter()
            .filter(|s| s.family == d.family())
            .map(|s| s.id.name());
        let near = catalog::closest(name, names.iter().copied().chain(rows));
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", near.join(", "))
        };
        CatalogError::InvalidBound {
            flag: "--protocol",
            reason: format!(
                "no environment {name:?}{hint}: a {} protocol is checked in {}, or in a {} row of the catalog",
                d.family(),
                names.join(", "),
                d.family()
            ),
        }
    })?;
    if row.family != d.family() {
        return Err(CatalogError::InvalidBound {
            flag: "--protocol",
            reason: format!(
                "{name} is a row of the {} family; {} is a protocol of the {} family",
                row.family,
                d.name(),
                d.family()
            ),
        });
    }
    Ok(Environment {
        name: name.to_string(),
        faults: row.faults.to_string(),
        params: row.defaults.clone(),
        properties: row.properties.to_vec(),
    })
}

/// Explores `d` in the environment named `env` (see [`environment`]) with `o`
/// applied: the verdict and one shortest story per violated property.
pub fn check(
    d: &Described,
    env: &str,
    o: &Overrides,
    limits: Limits,
) -> Result<Report, CatalogError> {
    check_in(d, &environment(d, env)?, o, limits, &mut |_| {})
}

/// [`check`] in a given environment, reporting progress.
pub fn check_in(
    d: &Described,
    env: &Environment,
    o: &Overrides,
    limits: Limits,
    progress: &mut dyn FnMut(&Stats),
) -> Result<Report, CatalogError> {
    let s = scenario(d, env);
    let p = params(&s, o)?;
    let told = s.build(&p).tell(limits, progress);
    Ok(catalog::report::report(&s, p, told))
}

/// The progress promises' verdicts on `d` in `env` with `o` applied (as
/// [`crate::catalog::progress`] judges a catalog row's); `None` where its family does
/// not state them.
pub fn progress_in(
    d: &Described,
    env: &Environment,
    o: &Overrides,
    limits: Limits,
) -> Result<Option<Vec<crate::progress::Verdict>>, CatalogError> {
    let s = scenario(d, env);
    let p = params(&s, o)?;
    Ok(s.progress(&p, &limits, o.once))
}

/// The scenario `d` is in `env`, and the diagram's participants at its bounds with `o`
/// applied: what a page of one of its reports draws.
pub fn cast_in(
    d: &Described,
    env: &Environment,
    o: &Overrides,
) -> Result<(Scenario, crate::catalog::Cast), CatalogError> {
    let s = scenario(d, env);
    let p = params(&s, o)?;
    let cast = s.build(&p).cast();
    Ok((s, cast))
}

/// The bounds of `s` with `o` applied.
fn params(s: &Scenario, o: &Overrides) -> Result<Params, CatalogError> {
    let mut p = catalog::params(s, o)?;
    if p.faults
        .iter()
        .any(|(f, n)| *f == Fault::Failover && *n > 0)
        && p.replicas == 0
    {
        // A failover needs a replica to promote.
        p.replicas = 1;
    }
    Ok(p)
}

/// The scenario a described protocol is in `env`. Its strings and model live as long as
/// the process: a catalog row's are `'static`, and a check keeps its report.
pub(crate) fn scenario(d: &Described, env: &Environment) -> Scenario {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let model: &'static dyn Build = d.model();
    Scenario {
        id: RowId::File(leak(format!("{}@{}", d.name(), env.name))),
        family: d.family(),
        protocol: leak(d.name().to_string()),
        faults: leak(env.faults.clone()),
        properties: Box::leak(env.properties.clone().into_boxed_slice()),
        expected: Expected::Holds,
        lesson: "",
        defaults: env.params.clone(),
        model,
    }
}
