//! The scenario catalog: every family's rows in one list, and the one entry point that
//! finds a row by id, applies the command line's bounds, builds the row's model, searches
//! it and tells the result. Rows live beside their models (`redis/catalog.rs`, …); this
//! file only puts the families together.

mod error;
mod params;
pub(crate) mod report;

use std::net::SocketAddr;
use std::sync::OnceLock;

pub use crate::checkable::{Checkable, Depths, Story, StoryStep};
pub use crate::registry::{Family, Fault, Property, ScenarioId};
pub use crate::scenario::{Build, Expected, Params, RowId, Scenario};
pub use error::CatalogError;
pub use params::{params, Overrides};
pub use report::{Report, Verdict};

use crate::check::{Limits, Stats};
pub use crate::diagram::Cast;

/// A family's rows. The match is exhaustive, so a new [`Family`] variant does not
/// compile until its folder's rows are listed here.
fn rows(family: Family) -> Vec<Scenario> {
    match family {
        Family::Inventory => crate::inventory::catalog::scenarios(),
        Family::Redis => crate::redis::catalog::scenarios(),
        Family::Redlock => crate::redlock::catalog::scenarios(),
        Family::Sql => crate::sql::catalog::scenarios(),
        Family::Etcd => crate::etcd::catalog::scenarios(),
        Family::Zk => crate::zk::catalog::scenarios(),
    }
}

/// Every scenario, family by family in [`Family::ALL`] order: built once, on first use.
pub fn scenarios() -> &'static [Scenario] {
    &built().0
}

/// The rows, and where each [`ScenarioId`]'s row sits among them.
fn built() -> &'static (Vec<Scenario>, Vec<Option<usize>>) {
    static BUILT: OnceLock<(Vec<Scenario>, Vec<Option<usize>>)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let rows: Vec<Scenario> = Family::ALL.iter().flat_map(|f| rows(*f)).collect();
        let mut at = vec![None; ScenarioId::ALL.len()];
        for (i, s) in rows.iter().enumerate() {
            if let Some(id) = s.id.row() {
                at[id as usize] = Some(i);
            }
        }
        (rows, at)
    })
}

/// The row of `id`. Every id has one: `every_scenario_id_is_one_row_and_every_row_has_an_id`
/// holds the catalog to it, so that a row missing is a failing test, never a user's error.
pub fn row(id: ScenarioId) -> &'static Scenario {
    let (rows, at) = built();
    match at[id as usize] {
        Some(i) => &rows[i],
        None => panic!("{id} has no row in the catalog"),
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The scenario a user's id names: the id read once into its [`ScenarioId`].
pub fn find(id: &str) -> Result<&'static Scenario, CatalogError> {
    match id.parse::<ScenarioId>() {
        Ok(typed) => Ok(row(typed)),
        Err(_) => Err(CatalogError::UnknownId {
            id: id.to_string(),
            closest: closest(id, ScenarioId::ALL.iter().map(|s| s.name())),
        }),
    }
}

/// What names a scenario to the catalog's entry points ([`check`], [`progress`],
/// [`cast`], [`explore`]): the row itself, its typed id, or the text a user typed, read
/// by [`find`] (an unknown id is the catalog's error, naming the closest).
pub trait Row {
    /// The scenario named.
    fn row(&self) -> Result<&Scenario, CatalogError>;
}

impl Row for Scenario {
    fn row(&self) -> Result<&Scenario, CatalogError> {
        Ok(self)
    }
}

impl Row for ScenarioId {
    fn row(&self) -> Result<&Scenario, CatalogError> {
        Ok(row(*self))
    }
}

impl Row for RowId {
    /// A protocol file's scenario is not in the catalog: its id is unknown there.
    fn row(&self) -> Result<&Scenario, CatalogError> {
        find(self.name())
    }
}

impl Row for str {
    fn row(&self) -> Result<&Scenario, CatalogError> {
        find(self)
    }
}

impl Row for String {
    fn row(&self) -> Result<&Scenario, CatalogError> {
        find(self)
    }
}

/// Up to three of `names` near enough to `asked` to be what was meant: a few typos
/// away (a third of its length, at least two), or one inside the other. None for a
/// word that is near nothing: a list of unrelated ids helps no one.
pub fn closest<'a>(asked: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let within = (asked.chars().count() / 3).max(2);
    let mut ranked: Vec<(usize, &'a str)> = names
        .filter_map(|n| {
            let d = levenshtein(asked, n);
            let inside = asked.len() >= 3 && (n.contains(asked) || asked.contains(n));
            (d <= within || inside).then_some((d, n))
        })
        .collect();
    ranked.sort();
    ranked.into_iter().take(3).map(|r| r.1).collect()
}

/// Checks scenario `s` with the given overrides (an error: overrides it cannot take).
pub fn check(
    s: &(impl Row + ?Sized),
    o: &Overrides,
    limits: Limits,
    progress: &mut dyn FnMut(&Stats),
) -> Result<Report, CatalogError> {
    let s = s.row()?;
    let p = params(s, o)?;
    let told = s.build(&p).tell(limits, progress);
    Ok(report::report(s, p, told))
}

/// The progress promises' verdicts on scenario `s` with the given overrides, its
/// graph held to `limits` (`None`: its family does not state them yet).
pub fn progress(
    s: &(impl Row + ?Sized),
    o: &Overrides,
    limits: Limits,
) -> Result<Option<Vec<crate::progress::Verdict>>, CatalogError> {
    let s = s.row()?;
    let p = params(s, o)?;
    Ok(s.progress(&p, &limits, o.once))
}

/// The diagram's participants of scenario `s` at these bounds, and their initial
/// state: what a page draws for a scenario without a counterexample.
pub fn cast(s: &(impl Row + ?Sized), o: &Overrides) -> Result<Cast, CatalogError> {
    let s = s.row()?;
    let p = params(s, o)?;
    Ok(s.build(&p).cast())
}

/// Serves stateright's Explorer for scenario `s` on `addr`; blocks while serving.
pub fn explore(
    s: &(impl Row + ?Sized),
    o: &Overrides,
    addr: SocketAddr,
) -> Result<(), CatalogError> {
    let s = s.row()?;
    let p = params(s, o)?;
    s.build(&p).serve(addr);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every typed id is exactly one row, and every row's id is a typed id: the rows,
    /// the plans, the locks and the strategies that name a row by its [`ScenarioId`]
    /// name one that exists.
    #[test]
    fn every_scenario_id_is_one_row_and_every_row_has_an_id() {
        let rows = scenarios();
        for id in crate::registry::ScenarioId::ALL {
            let n = rows.iter().filter(|s| s.id == RowId::Catalog(*id)).count();
            assert_eq!(n, 1, "{id}: {n} rows");
        }
        for s in rows {
            assert!(s.id.row().is_some(), "{} is no ScenarioId", s.id);
        }
        assert_eq!(rows.len(), crate::registry::ScenarioId::ALL.len());
    }

    #[test]
    fn ids_are_unique_and_rows_sit_in_their_family() {
        let all = scenarios();
        let mut ids: Vec<_> = all.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        assert_eq!(all.len(), 73);
        for f in Family::ALL {
            assert!(rows(*f).iter().all(|s| s.family == *f), "{f}");
        }
    }

    #[test]
    fn rows_expect_only_what_they_check_and_budget_only_their_faults() {
        for s in scenarios() {
            if let Expected::Violates(v) = s.expected {
                assert!(v.iter().all(|p| s.properties.contains(p)), "{}", s.id);
            }
            for (f, _) in &s.defaults.faults {
                assert!(s.family.faults().contains(f), "{}: {f}", s.id);
            }
        }
    }

    #[test]
    fn every_model_checks_exactly_its_rows_properties() {
        for s in scenarios() {
            let mut checks = s.build(&s.defaults).checks();
            let mut listed = s.properties.to_vec();
            checks.sort_unstable();
            listed.sort_unstable();
            assert_eq!(checks, listed, "{}", s.id);
        }
    }

    #[test]
    fn an_unknown_id_builds_nothing_and_names_the_closest() {
        let Err(CatalogError::UnknownId { id, closest }) = find("redis-lau") else {
            panic!("a mistyped id must not find a row");
        };
        assert_eq!(id, "redis-lau");
        assert_eq!(closest.first(), Some(&"redis-lua"));
        // A word near no id names none, and says where the ids are.
        let Err(e) = find("nope") else {
            panic!("no row is called nope");
        };
        assert_eq!(
            e.to_string(),
            "unknown scenario \"nope\" (`locklab models` lists every id)"
        );
        assert_eq!(
            super::closest("failover", scenarios().iter().map(|s| s.id.name()))[0],
            "redis-failover"
        );
    }

    #[test]
    fn faults_are_typed_and_checked_against_the_family() {
        let lua = find("redis-lua").expect("row");
        let with = |f: &str| Overrides {
            faults: Some(f.to_string()),
            ..Overrides::default()
        };
        let p = params(lua, &with("pause=2, failover")).expect("redis faults");
        assert_eq!(p.faults, vec![(Fault::Pause, 2), (Fault::Failover, 1)]);
        assert_eq!(params(lua, &with("none")).map(|p| p.faults), Ok(vec![]));
        let e = params(lua, &with("jump=1")).expect_err("a Redlock fault");
        assert_eq!(
            e.to_string(),
            "invalid --faults: unknown fault \"jump\" for redis-lua; known: pause, crash, hang, failover, split"
        );
        let e = params(lua, &with("meteor=1")).expect_err("no such fault");
        assert!(e.to_string().contains("unknown fault \"meteor\""), "{e}");
        let e = params(lua, &with("pause=x")).expect_err("not a number");
        assert!(e.to_string().contains("not a number"), "{e}");
        let e = params(lua, &with("pause=9")).expect_err("too many");
        assert!(e.to_string().contains("above 8"), "{e}");
    }
}
