//! What is particular to a user's protocol: the properties it breaks in an environment
//! that its family's sound recipe, in the same environment and at the same bounds,
//! keeps — and, in such a story, the user's own step the break rests on. A pause breaks
//! mutual exclusion for every lease lock; a GET-then-DEL release breaks no-foreign-release
//! where the Lua script does not: the second is what the user came to learn.

use crate::catalog::{self, Overrides, Report, Verdict};
use crate::check::Limits;
use crate::checkable::Story;
use crate::registry::Property;

use super::check::{scenario, Environment};
use super::Described;

/// A protocol's verdict in one environment held against its family's sound recipe's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Particular {
    /// The catalog row of the family's sound recipe, checked in the same environment.
    pub reference: &'static str,
    /// Broken here and by the recipe too: a limit of every lock of the family there.
    pub shared: Vec<Property>,
    /// Broken here and kept by the recipe: the protocol's own bugs.
    pub own: Vec<Property>,
    /// Broken here, and not a property the recipe's row states (liveness, where the
    /// row states safety alone): nothing to hold it against.
    pub unmatched: Vec<Property>,
}

/// `report` (of `d` in `env`, with `o` applied) against the recipe in the same
/// environment. `None` unless `report` is a violation and the recipe's search in the
/// same environment answered: an unknown proves nothing either way.
pub fn particular(
    d: &Described,
    env: &Environment,
    o: &Overrides,
    limits: Limits,
    report: &Report,
) -> Result<Option<Particular>, catalog::CatalogError> {
    let Verdict::Violated(broken) = &report.verdict else {
        return Ok(None);
    };
    let id = d.reference();
    let row = catalog::find(id)?;
    let p = catalog::params(&scenario(d, env), o)?;
    let told = row.build(&p).tell(limits, &mut |_| {});
    let theirs = catalog::report::report(row, p, told);
    let (stated, unmatched): (Vec<Property>, Vec<Property>) =
        broken.iter().partition(|q| row.properties.contains(q));
    let (shared, own) = match &theirs.verdict {
        Verdict::Unknown => return Ok(None),
        Verdict::Holds => (Vec::new(), stated),
        Verdict::Violated(theirs) => stated.into_iter().partition(|q| theirs.contains(q)),
    };
    Ok(Some(Particular {
        reference: id,
        shared,
        own,
        unmatched,
    }))
}

/// In a foreign release's story, the releasing client's own earlier command the
/// release rests on: `(acted, saw)`, the 1-based steps of the command that changed
/// another client's lock and of the same client's last command before it (a GET whose
/// answer went stale, a refused SET that a `finally` ignores). `None` for any other
/// property (in a mutual-exclusion story the last step is the second client's entry,
/// not the stale one's), or when the client sent nothing before.
pub fn stale_read(story: &Story) -> Option<(usize, usize)> {
    if story.property != Property::NoForeignRelease {
        return None;
    }
    let last = story.steps.last()?;
    let client = last.action.split_once(": ")?.0;
    let is_client = client.starts_with('c') && client[1..].bytes().all(|b| b.is_ascii_digit());
    if !is_client {
        return None;
    }
    let own = format!("{client}: ");
    let saw = story.steps[..story.steps.len() - 1]
        .iter()
        .rev()
        .find(|s| s.action.starts_with(&own))?;
    Some((last.n, saw.n))
}
