//! The progress promises on a model's page: a line per promise, and each broken one's
//! lasso drawn as the counterexamples are, its cycle marked — the steps that repeat for
//! ever carry "↻" and a bracket note, a dead end ends in an "∞" row where nothing more
//! happens.

use std::fmt::Write;

use locklab_models::catalog::Cast;
use locklab_models::diagram::{Exchange, Scene};
use locklab_models::progress::{Kept, Lasso, Promise, Verdict};

use super::page::{CONTROLS, LEGEND};
use super::svg::{sequence, Row};
use crate::escape::escape;

/// The progress section: the promises' verdicts, then each lasso's diagram.
pub fn progress_section(verdicts: &[Verdict], cast: &Cast) -> String {
    let mut out = String::from(
        "<section class=\"story progress\"><h2>Progress <span class=\"muted\">(under weak fairness of the clock, the servers and each client's own steps)</span></h2><dl class=\"facts\">",
    );
    for v in verdicts {
        let (class, word) = match &v.kept {
            Kept::Holds => ("holds", "holds".to_string()),
            Kept::Violated { lasso } => ("violated", format!("violated: {}", lasso.shape())),
            Kept::Unknown { why } => ("unknown", format!("unknown: {why}")),
        };
        let _ = write!(
            out,
            "<dt>{}</dt><dd><span class=\"verdict {class}\">{}</span></dd>",
            escape(v.promise.name()),
            escape(&word)
        );
    }
    out.push_str("</dl></section>");
    for v in verdicts {
        if let Kept::Violated { lasso } = &v.kept {
            out.push_str(&lasso_section(lasso, cast));
        }
    }
    out
}

fn lasso_section(lasso: &Lasso, cast: &Cast) -> String {
    let initial_title = "initial state".to_string();
    let mut rows = vec![Row {
        step: 0,
        label: "start".into(),
        time: cast.initial.now.map(|t| format!("t={t}")),
        title: &initial_title,
        fault: false,
        gap: None,
        scene: &cast.initial,
    }];
    for st in &lasso.steps {
        let cyclic = st.n > lasso.stem;
        rows.push(Row {
            step: st.n,
            label: if cyclic {
                format!("↻{}", st.n)
            } else {
                st.n.to_string()
            },
            time: st.scene.now.map(|t| format!("t={t}")),
            title: &st.action,
            fault: st.fault,
            gap: None,
            scene: &st.scene,
        });
    }
    // A dead end: one more row, the same state, where nothing happens any more.
    let forever = "nothing more can happen, for ever".to_string();
    let stutter = lasso.steps.last().map(|last| Scene {
        now: last.scene.now,
        exchange: Exchange::default(),
        lanes: last.scene.lanes.clone(),
    });
    let fifo = lasso.promise == Promise::Fifo;
    if lasso.cycle().is_empty() && !fifo {
        if let Some(scene) = &stutter {
            rows.push(Row {
                step: lasso.steps.len() + 1,
                label: "∞".into(),
                time: scene.now.map(|t| format!("t={t}")),
                title: &forever,
                fault: false,
                gap: None,
                scene,
            });
        }
    }
    let cycle_note = if fifo {
        "The last step grants the lock out of request order.".to_string()
    } else if lasso.cycle().is_empty() {
        format!(
            "From step {} on, no step is possible and no deadline is ahead that will come (one a live heartbeat keeps moves on with time): the row marked ∞ lasts for ever.",
            lasso.stem
        )
    } else {
        format!(
            "The steps marked ↻ ({} to {}) repeat for ever, back to the state after step {}.",
            lasso.stem + 1,
            lasso.steps.len(),
            lasso.stem
        )
    };
    let mut list = String::new();
    for st in &lasso.steps {
        let _ = write!(
            list,
            "<li value=\"{n}\" data-step=\"{n}\" data-say=\"{a}{f}\"{cls}><span>{mark}{a}{f}</span><details><summary>state after</summary><pre>{s}</pre></details></li>",
            n = st.n,
            mark = if st.n > lasso.stem { "↻ " } else { "" },
            a = escape(&st.action),
            f = if st.fault { " ⚡ FAULT" } else { "" },
            cls = if st.fault { " class=\"fault\"" } else { "" },
            s = escape(&st.state.join("\n"))
        );
    }
    format!(
        "<section class=\"story lasso\"><h2>{title}</h2>\
{LEGEND}{CONTROLS}<p class=\"muted\">{note}</p><div class=\"scroll\">{svg}</div>\
<div class=\"why\"><strong>{why_title} ({p}).</strong> {why}</div>\
<h3>The steps</h3><ol class=\"steps\" start=\"1\">{list}</ol></section>",
        title = if fifo {
            format!(
                "Counterexample for {} <span class=\"muted\">({} steps, shortest)</span>",
                escape(lasso.promise.name()),
                lasso.steps.len()
            )
        } else {
            format!(
                "Lasso for {} <span class=\"muted\">({} steps to the cycle, {} in it)</span>",
                escape(lasso.promise.name()),
                lasso.stem,
                lasso.cycle().len()
            )
        },
        why_title = if fifo {
            "Why it broke"
        } else {
            "Why it never ends"
        },
        p = escape(lasso.promise.name()),
        note = escape(&cycle_note),
        svg = sequence(&cast.lanes, &rows),
        why = escape(&lasso.closing),
    )
}
