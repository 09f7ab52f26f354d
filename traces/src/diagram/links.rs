//! Which rows of a real run realise which step of the model's story, so the run page
//! links them both ways.
//!
//! The two are aligned on what both have for certain: clients entering the critical
//! section. The model's clients are matched to the run's in the order they first
//! entered (the model's c0 is whichever run client got the lock first), then each
//! model entry to the next entry of its run client. Between two matched entries, a
//! model fault step stands for the run's faults there (a model's one "failover" may
//! be a run's kill and Sentinel's promotion), and an entry step for its client's rows
//! since the last match (the command that granted, the acquire, the entry). A step
//! the run shows nothing for stays unlinked: this is a reading aid, never a claim.

use std::collections::{BTreeMap, BTreeSet};

use locklab_models::catalog::Story;
use locklab_models::diagram::{LaneKind, Scene};

use super::run::RunDiagram;

/// Links between a model story's steps (1-based `n`) and a run diagram's rows (1-based,
/// as the run page numbers them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    /// Model step → the run rows that realise it, in order.
    pub to_run: BTreeMap<usize, Vec<usize>>,
    /// Run row → the model step it realises.
    pub to_model: BTreeMap<usize, usize>,
}

impl Links {
    fn link(&mut self, step: usize, row: usize) {
        if self.to_model.contains_key(&row) {
            return;
        }
        self.to_model.insert(row, step);
        self.to_run.entry(step).or_default().push(row);
    }
}

/// Clients inside the critical section in `scene`, by lane id.
fn inside(scene: &Scene, clients: &BTreeSet<&str>) -> BTreeSet<String> {
    scene
        .lanes
        .iter()
        .filter(|l| l.critical && clients.contains(l.lane.as_str()))
        .map(|l| l.lane.clone())
        .collect()
}

/// `(position, client)` of every entry into the critical section along `scenes`
/// (position 1-based; `before` is the state before the first).
fn entries<'a>(
    before: Option<&Scene>,
    scenes: impl Iterator<Item = &'a Scene>,
    clients: &BTreeSet<&str>,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut prev = before.map(|s| inside(s, clients));
    for (i, s) in scenes.enumerate() {
        let now = inside(s, clients);
        // The first row of a run's window has no "before": who is inside there entered
        // outside the window.
        if let Some(p) = &prev {
            out.extend(now.difference(p).map(|c| (i + 1, c.clone())));
        }
        prev = Some(now);
    }
    out
}

/// Aligns `story` with the run drawn in `run`.
pub fn align(story: &Story, run: &RunDiagram) -> Links {
    let model_clients: BTreeSet<&str> = story
        .cast
        .lanes
        .iter()
        .filter(|l| l.kind == LaneKind::Client)
        .map(|l| l.id.as_str())
        .collect();
    let run_clients: BTreeSet<&str> = run
        .lanes
        .iter()
        .filter(|l| l.kind == LaneKind::Client)
        .map(|l| l.id.as_str())
        .collect();
    let m = entries(
        Some(&story.cast.initial),
        story.steps.iter().map(|s| &s.scene),
        &model_clients,
    );
    let r = entries(None, run.rows.iter().map(|r| &r.scene), &run_clients);
    // Clients matched in the order they first entered.
    let firsts = |es: &[(usize, String)]| {
        let mut seen: Vec<String> = Vec::new();
        for (_, c) in es {
            if !seen.contains(c) {
                seen.push(c.clone());
            }
        }
        seen
    };
    let who: BTreeMap<String, String> = firsts(&m).into_iter().zip(firsts(&r)).collect();
    let fault_rows = |lo: usize, hi: usize| -> Vec<usize> {
        (lo + 1..hi)
            .filter(|&i| run.rows.get(i - 1).is_some_and(|r| r.fault))
            .collect()
    };
    let mut links = Links::default();
    let (mut step_lo, mut row_lo) = (0usize, 0usize);
    for (step, client) in &m {
        let Some(run_client) = who.get(client) else {
            break;
        };
        let Some(&(row, _)) = r.iter().find(|(row, c)| *row > row_lo && c == run_client) else {
            break;
        };
        let faults = fault_rows(row_lo, row);
        for st in story
            .steps
            .iter()
            .filter(|s| s.n > step_lo && s.n < *step && s.fault)
        {
            for &f in &faults {
                links.link(st.n, f);
            }
        }
        for i in row_lo + 1..=row {
            if run.rows.get(i - 1).and_then(|r| r.who.as_deref()) == Some(run_client.as_str()) {
                links.link(*step, i);
            }
        }
        (step_lo, row_lo) = (*step, row);
    }
    // After the last matched entry: the model's remaining faults and the run's.
    let faults = fault_rows(row_lo, run.rows.len() + 1);
    for st in story.steps.iter().filter(|s| s.n > step_lo && s.fault) {
        for &f in &faults {
            links.link(st.n, f);
        }
    }
    links
}

/// `rows` as words: `row 7`, `rows 8–10`, `rows 2, 5`.
pub fn rows_text(rows: &[usize]) -> String {
    match rows {
        [] => String::new(),
        [one] => format!("row {one}"),
        [first, .., last] if rows.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("rows {first}–{last}")
        }
        many => format!(
            "rows {}",
            many.iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_models::catalog::{check, Overrides};
    use locklab_models::check::Limits;
    use locklab_models::diagram::{Lane, LaneState};
    use locklab_models::registry::Property;

    use crate::diagram::run::RunRow;

    /// A run row of `who` after which `inside` are in their sections.
    fn row(who: &str, fault: bool, inside: &[&str]) -> RunRow {
        RunRow {
            title: String::new(),
            at_ms: 0,
            at: 0,
            fault,
            who: Some(who.to_string()),
            scene: Scene {
                now: None,
                exchange: Default::default(),
                lanes: inside
                    .iter()
                    .map(|c| LaneState {
                        lane: c.to_string(),
                        critical: true,
                        ..LaneState::default()
                    })
                    .collect(),
            },
        }
    }

    /// The model's pause story (c0 enters, pauses, its key expires, c1 enters) against a
    /// run whose first holder is c2: the model's c0 is the run's c2, each entry links to
    /// its client's rows since the last match, the pause to the fault row between the
    /// entries, and a row nobody realises (another client's refused try) stays
    /// unlinked.
    #[test]
    fn entries_match_clients_in_order_and_faults_link_between_them() {
        let report = check(
            "redis-lua-pause",
            &Overrides::default(),
            Limits::default(),
            &mut |_| {},
        )
        .expect("a catalog row");
        let story = report
            .stories
            .iter()
            .find(|s| s.property == Property::MutualExclusion)
            .expect("a story");
        let lanes = ["c0", "c1", "c2"]
            .iter()
            .map(|c| Lane::new(*c, *c, LaneKind::Client))
            .collect();
        let run = RunDiagram {
            lanes,
            rows: vec![
                // Who is inside on a window's first row entered before it: a row
                // before the entry starts the window.
                row("c2", false, &[]),
                row("c2", false, &["c2"]),
                row("c1", false, &["c2"]),
                row("nemesis", true, &["c2"]),
                row("c0", false, &["c2", "c0"]),
            ],
            window: (0, 0),
            logical: false,
            why: String::new(),
            hidden: 0,
        };
        let links = align(story, &run);
        let (entry0, pause, entry1) = (1, 2, 5);
        assert!(
            story.steps[pause - 1].fault,
            "{:?}",
            story.steps[pause - 1].action
        );
        // c2's grant and entry are the model's c0 entering.
        assert_eq!(links.to_run.get(&entry0), Some(&vec![1, 2]), "{links:?}");
        assert_eq!(links.to_run.get(&pause), Some(&vec![4]), "{links:?}");
        assert_eq!(links.to_run.get(&entry1), Some(&vec![5]), "{links:?}");
        assert_eq!(links.to_model.get(&3), None, "c1's try realises no step");
        assert_eq!(links.to_model.get(&5), Some(&entry1));
    }

    #[test]
    fn rows_read_as_a_range_or_a_list() {
        assert_eq!(rows_text(&[7]), "row 7");
        assert_eq!(rows_text(&[8, 9, 10]), "rows 8–10");
        assert_eq!(rows_text(&[2, 5]), "rows 2, 5");
    }
}
