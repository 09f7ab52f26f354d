//! The index over the catalog: one row per scenario with its verdict, what the catalog
//! expects, the real run's agreement when known, and a link to its page.

use std::fmt::Write;

use super::page::document;
use crate::escape::escape;

/// One scenario in the index.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct IndexRow {
    /// Catalog id.
    pub id: String,
    /// The scenario's family as the catalog names it (`redis`, `sql`, `zookeeper`, …).
    pub family: String,
    /// Protocol in words.
    pub protocol: String,
    /// The fault in words.
    pub fault: String,
    /// What the catalog expects.
    pub expected: String,
    /// What the model check found.
    pub verdict: String,
    /// Whether the verdict is the expected one.
    pub matches: bool,
    /// The real run's agreement with the model, when one is known.
    pub agreement: Option<String>,
    /// The page's file name, relative to the index.
    pub page: String,
}

/// The index document.
pub fn index_page(rows: &[IndexRow]) -> String {
    let mut body = String::from(
        "<h1>locklab — every scenario</h1><p class=\"lesson\">Each page draws a scenario's shortest counterexample as a sequence diagram (or shows that there is none), with the lesson it teaches. On a page, the buttons (or ← → once the story has focus) walk a story step by step.</p>\
<table class=\"cat\"><thead><tr><th>id</th><th>family</th><th>protocol</th><th>fault</th><th>expected</th><th>model verdict</th><th>as the catalog says</th><th>real run</th></tr></thead><tbody>",
    );
    for r in rows {
        let _ = write!(
            body,
            "<tr><td><a href=\"{page}\">{id}</a></td><td>{family}</td><td>{protocol}</td><td>{fault}</td><td>{expected}</td><td class=\"{cls}\">{verdict}</td><td>{mark}</td><td>{agreement}</td></tr>",
            page = escape(&r.page),
            id = escape(&r.id),
            family = escape(&r.family),
            protocol = escape(&r.protocol),
            fault = escape(&r.fault),
            expected = escape(&r.expected),
            // The verdict is coloured by what it says (a broken promise red, whatever
            // the catalog expected); whether it is the catalog's is a mark of its own.
            cls = verdict_class(&r.verdict),
            verdict = escape(&r.verdict),
            mark = if r.matches {
                "<span class=\"ok\">✓ matches</span>"
            } else {
                "<span class=\"bad\">✗ differs</span>"
            },
            agreement = r
                .agreement
                .as_deref()
                .map_or("<span class=\"muted\">—</span>".to_string(), escape),
        );
    }
    body.push_str("</tbody></table>");
    document("locklab scenarios", &body)
}

/// The colour of a verdict by what it says: a violation red, a promise kept green, an
/// undecided one plain.
fn verdict_class(verdict: &str) -> &'static str {
    let v = verdict.to_ascii_lowercase();
    if v.starts_with("violates") || v.starts_with("violated") {
        "bad"
    } else if v.starts_with("holds") {
        "ok"
    } else {
        "muted"
    }
}
