//! The run's page: the real run's lanes beside the model's diagram of the same
//! scenario — two views of one failure — with the table of where they agree.

use std::collections::BTreeMap;
use std::fmt::Write;

use locklab_models::catalog::{Cast, Report, Scenario};

use super::links::align;
use super::model::{header, model_section_linked};
use super::page::{document, CONTROLS, LEGEND};
use super::run::RunDiagram;
use super::svg::{sequence, Row};
use crate::escape::escape;

/// A stretch at least this long between two drawn rows gets a break mark.
const QUIET_MS: u64 = 400;

/// One property as the model expects it and as the run saw it.
#[derive(Clone, Debug)]
pub struct AgreementRow {
    /// The model property compared, in words (`mutual exclusion`), first in its table row.
    pub property: String,
    /// `violated` / `holds`.
    pub model: String,
    /// What the history showed.
    pub run: String,
    /// `agrees`, `DISAGREES`, `not compared`.
    pub verdict: String,
}

/// What the page says about the run.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// Seed of the run.
    pub seed: u64,
    /// How many clients the run used (`--clients`, else the plan's default).
    pub clients: usize,
    /// Events recorded.
    pub events: u64,
    /// The servers.
    pub topology: String,
    /// What the faults do.
    pub story: String,
    /// The run's verdict in a word.
    pub verdict: String,
    /// Whether it agrees with the model: `Some(true)` yes, `Some(false)` no (with
    /// proof), `None` unknown.
    pub agrees: Option<bool>,
    /// How it stands against the model, in words (the agreement's headline).
    pub standing: String,
    /// Everything else the reader must not miss: why an answer is unknown, violations
    /// no model property is compared with.
    pub notes: Vec<String>,
    /// Per property.
    pub rows: Vec<AgreementRow>,
    /// File name of the linearizability visualization beside this page, if written.
    pub linearizability: Option<String>,
}

/// The whole page.
pub fn run_page(
    s: &Scenario,
    model: &Report,
    cast: &Cast,
    run: &RunSummary,
    diagram: &RunDiagram,
) -> String {
    let mut body = format!("<header>{}</header>", header(s, model));
    let _ = write!(
        body,
        "<h2>The real run and the model</h2><dl class=\"facts\"><dt>Servers</dt><dd>{}</dd><dt>Faults</dt><dd>{}</dd>\
<dt>Run</dt><dd>seed {}, {} clients, {} events</dd><dt>Run verdict</dt><dd><span class=\"verdict {}\">{}</span> — {}</dd></dl>\
<table class=\"cat\"><thead><tr><th>property</th><th>model</th><th>real run</th><th></th></tr></thead><tbody>",
        escape(&run.topology),
        escape(&run.story),
        run.seed,
        run.clients,
        run.events,
        if run.verdict.eq_ignore_ascii_case("ok") { "holds" } else { "violated" },
        escape(&run.verdict),
        format_args!(
            "<span class=\"{}\">{}</span>",
            match run.agrees {
                Some(true) => "ok",
                Some(false) => "bad",
                None => "muted",
            },
            escape(&run.standing)
        )
    );
    for r in &run.rows {
        let cls = if r.verdict == "agrees" {
            "ok"
        } else if r.verdict.starts_with("DISAGREES") {
            "bad"
        } else {
            "muted"
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{}</td></tr>",
            escape(&r.property),
            escape(&r.model),
            escape(&r.run),
            escape(&r.verdict)
        );
    }
    body.push_str("</tbody></table>");
    for note in &run.notes {
        let _ = write!(body, "<p class=\"bad\">{}</p>", escape(note));
    }
    if let Some(l) = &run.linearizability {
        let _ = write!(
            body,
            "<p>The linearizability search of this history, drawn by porcupine-rs: <a href=\"{0}\">{0}</a>.</p>",
            escape(l)
        );
    }
    // The run is the page's first story, the model's first counterexample its second.
    let links = model.stories.first().map(|st| align(st, diagram));
    body.push_str("<div class=\"side\">");
    body.push_str(&run_section_linked(
        diagram,
        "The real run",
        links.as_ref().map(|l| &l.to_model),
    ));
    let _ = write!(
        body,
        "<div class=\"model\"><h2>The model's shortest counterexample</h2>{}</div></div>",
        model_section_linked(s, model, cast, links.as_ref().map(|l| &l.to_run))
    );
    document(&format!("{} — real run and model — locklab", s.id), &body)
}

/// The lanes of `d` under the heading `title` (`The real run`).
pub(crate) fn run_section(d: &RunDiagram, title: &str) -> String {
    run_section_linked(d, title, None)
}

/// As [`run_section`], each row linked to the model step it realises (`links`: row →
/// step of the page's second story).
fn run_section_linked(
    d: &RunDiagram,
    title: &str,
    links: Option<&BTreeMap<usize, usize>>,
) -> String {
    let initial = locklab_models::diagram::Scene::default();
    let mut rows = vec![Row {
        step: 0,
        label: "window".into(),
        time: Some(when(d, d.window.0)),
        title: "the window starts",
        fault: false,
        gap: None,
        scene: &initial,
    }];
    let mut list = String::from(
        "<li value=\"0\" data-step=\"0\" data-say=\"the window starts\">the window starts</li>",
    );
    let mut before = d.window.0 / 1_000_000;
    for (i, r) in d.rows.iter().enumerate() {
        // Rows are evenly spaced whatever lies between them: a long quiet stretch is
        // marked where it was left out, so 1 ms and 2 s do not look the same.
        let quiet = if d.logical {
            0
        } else {
            r.at_ms.saturating_sub(before)
        };
        before = r.at_ms;
        rows.push(Row {
            step: i + 1,
            label: (i + 1).to_string(),
            time: Some(when(d, r.at)),
            title: &r.title,
            fault: r.fault,
            gap: (quiet >= QUIET_MS).then(|| format!("+{:.1} s", quiet as f64 / 1000.0)),
            scene: &r.scene,
        });
        let peer = links.and_then(|l| l.get(&(i + 1)));
        let _ = write!(
            list,
            "<li value=\"{n}\" data-step=\"{n}\" data-say=\"{t}{say}\"{cls}><span>{ms} — {t}</span>{link}</li>",
            n = i + 1,
            t = escape(&r.title),
            say = peer.map_or(String::new(), |k| format!(" (model step {k})")),
            link = peer.map_or(String::new(), |k| format!(
                " <a class=\"peer\" href=\"#story=1&amp;step={k}\">↔ model step {k}</a>"
            )),
            ms = when(d, r.at),
            cls = if r.fault { " class=\"fault\"" } else { "" }
        );
    }
    let empty = if d.rows.is_empty() {
        "<p class=\"holds-note\">The recorded history has no event in this window.</p>"
    } else {
        ""
    };
    format!(
        "<section class=\"story run\"><h2>{title} <span class=\"muted\">({} – {})</span></h2>\
<p>Drawn from the recorded history: {why}. {clock} leases as the clients believed them. \
Red arrows and marks are the operations the checks name. {hidden} events in the window are not drawn (invocations, refused or unanswered tries{more}).</p>\
{LEGEND}{CONTROLS}{empty}<div class=\"scroll\">{svg}</div>\
<details class=\"noprint\"><summary>The events drawn</summary><ol class=\"steps\" start=\"0\">{list}</ol></details></section>",
        when(d, d.window.0),
        when(d, d.window.1),
        clock = if d.logical {
            "Times are positions in the history (it has no real times), not ms;"
        } else {
            "Times are ms on the history's clock (a run's counts from its start);"
        },
        title = escape(title),
        why = escape(&d.why),
        hidden = d.hidden,
        more = if d.rows.len() >= 60 {
            ", and, past 60 rows, the commands and steps farthest from the operations the checks name"
        } else {
            ""
        },
        svg = sequence(&d.lanes, &rows),
    )
}

/// A time of `d`'s history as the page prints it: `2716 ms`, or `t=42` on a logical
/// clock.
fn when(d: &RunDiagram, ns: u64) -> String {
    if d.logical {
        format!("t={ns}")
    } else {
        format!("{} ms", ns / 1_000_000)
    }
}
