//! The model's page of a scenario: the lesson and the protocol, the verdict, and each
//! shortest counterexample as a sequence diagram with the closing "why it broke"; a
//! scenario that holds shows its participants and says there is no counterexample.

use std::collections::BTreeMap;
use std::fmt::Write;

use locklab_models::catalog::{Cast, Expected, Report, Scenario, Story, Verdict};

use locklab_models::progress::Verdict as Promised;

use super::lasso::progress_section;
use super::links::rows_text;
use super::page::{document, CONTROLS, LEGEND};
use super::svg::{sequence, Row};
use crate::escape::escape;

/// The whole page of scenario `s` as model-checked in `r`; `cast` draws the lanes when
/// there is no story. With `progress`, the promises' verdicts and lassos follow.
pub fn model_page(s: &Scenario, r: &Report, cast: &Cast, progress: Option<&[Promised]>) -> String {
    document(
        &format!("{} — locklab", s.id),
        &format!(
            "<header>{}</header>\n{}{}",
            header(s, r),
            model_section(s, r, cast),
            progress.map_or(String::new(), |p| progress_section(p, cast))
        ),
    )
}

/// The verdict in words.
pub fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Holds => "holds".into(),
        Verdict::Violated(ps) => format!(
            "violates {}",
            ps.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" + ")
        ),
        Verdict::Unknown => "unknown (a limit stopped the search)".into(),
    }
}

/// The catalog's expectation in words.
pub fn expected_text(e: Expected) -> String {
    match e {
        Expected::Holds => "holds".into(),
        Expected::Violates(ps) => format!(
            "violates {}",
            ps.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    }
}

/// Title, protocol, fault, lesson and verdict. A scenario without a lesson is a user's
/// protocol, which states no expected verdict: neither is shown.
pub fn header(s: &Scenario, r: &Report) -> String {
    let catalog_row = !s.lesson.is_empty();
    let verdict_class = match r.verdict {
        Verdict::Holds => "holds",
        Verdict::Violated(_) => "violated",
        Verdict::Unknown => "unknown",
    };
    let p = &r.params;
    let faults = if p.faults.is_empty() {
        "none".to_string()
    } else {
        p.faults
            .iter()
            .map(|(f, n)| format!("{f}={n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "<h1>{id} <span class=\"muted\">— {protocol}</span></h1>\
{lesson}\
<dl class=\"facts\"><dt>Protocol</dt><dd>{protocol}</dd><dt>Fault</dt><dd>{fault}</dd>\
<dt>Properties</dt><dd>{props}</dd>\
<dt>Model verdict</dt><dd><span class=\"verdict {verdict_class}\">{verdict}</span>{expected}</dd>\
<dt>Bounds</dt><dd class=\"mono\">clients={clients} replicas={replicas} nodes={nodes} ttl={ttl} faults=[{faults}]</dd>\
<dt>Search</dt><dd class=\"muted\">{states} states ({distinct} distinct, depth {depth})</dd></dl>",
        id = escape(s.id.name()),
        protocol = escape(s.protocol),
        lesson = if catalog_row {
            format!(
                "<p class=\"lesson\"><strong>Lesson.</strong> {}</p>",
                escape(s.lesson)
            )
        } else {
            String::new()
        },
        fault = escape(s.faults),
        props = escape(
            &s.properties
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        verdict = escape(&verdict_text(&r.verdict)),
        expected = if catalog_row {
            format!(
                " <span class=\"muted\">(expected: {}; {})</span>",
                escape(&expected_text(r.expected)),
                if r.matches_expected {
                    "matches"
                } else {
                    "DIFFERS"
                }
            )
        } else {
            String::new()
        },
        clients = p.clients,
        replicas = p.replicas,
        nodes = p.nodes,
        ttl = p.ttl,
        faults = escape(&faults),
        states = r.stats.states,
        distinct = r.stats.unique_states,
        depth = r.stats.max_depth,
    )
}

/// The diagrams: one section per story, or the cast and a note when there is none.
pub fn model_section(s: &Scenario, r: &Report, cast: &Cast) -> String {
    model_section_linked(s, r, cast, None)
}

/// As [`model_section`], the first story's steps linked to the rows of a real run that
/// realise them (`links`: step → rows of the page's first story, the run).
pub fn model_section_linked(
    s: &Scenario,
    r: &Report,
    cast: &Cast,
    links: Option<&BTreeMap<usize, Vec<usize>>>,
) -> String {
    let mut out = String::new();
    if r.stories.is_empty() {
        let note = match r.verdict {
            Verdict::Unknown => "A limit stopped the search before an answer, so no counterexample was found and none was ruled out.".to_string(),
            _ => format!(
                "No counterexample: every interleaving within these bounds was explored and {} held in all of them. Below are the participants in their initial state.",
                s.properties.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        let rows = [Row {
            step: 0,
            label: "start".into(),
            time: cast.initial.now.map(|t| format!("t={t}")),
            title: "initial state",
            fault: false,
            gap: None,
            scene: &cast.initial,
        }];
        let _ = write!(
            out,
            "<section class=\"story holds\"><h2>No counterexample</h2><p class=\"holds-note\">{}</p>{LEGEND}<div class=\"scroll\">{}</div></section>",
            escape(&note),
            sequence(&cast.lanes, &rows)
        );
    }
    for (i, story) in r.stories.iter().enumerate() {
        out.push_str(&story_section(story, links.filter(|_| i == 0)));
    }
    out
}

fn story_section(story: &Story, links: Option<&BTreeMap<usize, Vec<usize>>>) -> String {
    let initial_title = "initial state".to_string();
    // A clock that never moves (a model without time) says nothing: no "t=0" on every row.
    let timed = story
        .steps
        .iter()
        .any(|st| st.scene.now != story.cast.initial.now);
    let at = |now: Option<u64>| now.filter(|_| timed).map(|t| format!("t={t}"));
    let mut rows = vec![Row {
        step: 0,
        label: "start".into(),
        time: at(story.cast.initial.now),
        title: &initial_title,
        fault: false,
        gap: None,
        scene: &story.cast.initial,
    }];
    for st in &story.steps {
        rows.push(Row {
            step: st.n,
            label: st.n.to_string(),
            time: at(st.scene.now),
            title: &st.action,
            fault: st.fault,
            gap: None,
            scene: &st.scene,
        });
    }
    let mut list = String::new();
    let state = |lines: &[String]| escape(&lines.join("\n"));
    let _ = write!(
        list,
        "<li value=\"0\" data-step=\"0\" data-say=\"initial state\"><span>initial state</span><details><summary>state</summary><pre>{}</pre></details></li>",
        state(&story.initial)
    );
    for st in &story.steps {
        let peer = links
            .and_then(|l| l.get(&st.n))
            .filter(|rows| !rows.is_empty());
        let _ = write!(
            list,
            "<li value=\"{n}\" data-step=\"{n}\" data-say=\"{a}{f}{say}\"{cls}><span>{a}{f}</span>{link}<details><summary>state after</summary><pre>{s}</pre></details></li>",
            n = st.n,
            a = escape(&st.action),
            f = if st.fault { " ⚡ FAULT" } else { "" },
            say = peer.map_or(String::new(), |rows| format!(" (the run's {})", rows_text(rows))),
            // The link opens the run at the last of its rows, the ones before it shown.
            link = peer.map_or(String::new(), |rows| format!(
                " <a class=\"peer\" href=\"#story=0&amp;step={}\">↔ the run's {}</a>",
                rows.last().copied().unwrap_or(0),
                rows_text(rows)
            )),
            cls = if st.fault { " class=\"fault\"" } else { "" },
            s = state(&st.state)
        );
    }
    format!(
        "<section class=\"story\"><h2>Counterexample for {prop} <span class=\"muted\">({n} steps{shortest})</span></h2>\
{LEGEND}{CONTROLS}<div class=\"scroll\">{svg}</div>\
<div class=\"why\"><strong>Why it broke ({prop}).</strong> {why}</div>\
<h3>The steps</h3><ol class=\"steps\" start=\"0\">{list}</ol></section>",
        prop = escape(&story.property.to_string()),
        n = story.steps.len(),
        shortest = if story.shortest {
            ", shortest"
        } else {
            ", found depth first: not always the shortest"
        },
        svg = sequence(&story.cast.lanes, &rows),
        why = escape(&story.closing),
    )
}
