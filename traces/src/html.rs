//! The HTML report: porcupine-rs's visualization of the linearizability search, with the
//! nemesis actions and critical sections drawn as annotations.
//!
//! porcupine-rs 0.3 pastes its data into a `<script>` as raw JSON and shows state
//! descriptions and annotation details through `innerHTML`. So every text that reaches
//! `innerHTML` is HTML-escaped here, and the JSON is rewritten so that no `<`, `>` or `&`
//! appears in it literally: an operation described as `</script>` cannot end the script.

use locklab_models::spec::Spec;
use porcupine_rs::{Annotation, LinearizationInfo};

use crate::check::linear::SpecModel;
use crate::check::mutex;
pub use crate::escape::escape;
use crate::format::Process;
use crate::ops::Paired;

/// A rendered HTML page.
#[derive(Clone, Debug)]
pub struct Page {
    /// The whole document.
    pub html: String,
}

const DATA_START: &str = "const data = ";
const DATA_END: &str = "\n\n      render(data)";

/// Makes the JSON embedded in the page inert inside `<script>`: `<`, `>` and `&` become
/// `\u003c`, `\u003e`, `\u0026` (the same characters to JavaScript, nothing to the HTML
/// parser). Everything outside the data is porcupine-rs's own template, left alone.
fn neutralize_data(html: &str) -> String {
    let (Some(start), Some(end)) = (html.find(DATA_START), html.rfind(DATA_END)) else {
        return html.to_string();
    };
    let start = start + DATA_START.len();
    if end < start {
        return html.to_string();
    }
    let data = html[start..end]
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!("{}{}{}", &html[..start], data, &html[end..])
}

fn annotations(paired: &Paired, reentrant: bool) -> Vec<Annotation> {
    let mut out = Vec::new();
    for (_, e) in &paired.points {
        if let Process::Nemesis(_) = e.process {
            let what = e
                .value
                .as_ref()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "fault".to_string());
            out.push(Annotation {
                tag: Some("nemesis".to_string()),
                start: clamp(e.time),
                end: None,
                description: e.note.clone().unwrap_or_else(|| what.clone()),
                details: escape(&what),
                text_color: "#ffffff".to_string(),
                background_color: "#c0392b".to_string(),
                ..Annotation::default()
            });
        }
    }
    for s in mutex::sections(paired, reentrant) {
        out.push(Annotation {
            client_id: Some(s.process),
            start: clamp(s.start),
            end: Some(clamp(s.end)),
            description: "critical section".to_string(),
            details: escape(&format!(
                "c{} in its critical section{}",
                s.process,
                s.token
                    .map(|t| format!(" with token {t}"))
                    .unwrap_or_default()
            )),
            background_color: "#f7dc6f".to_string(),
            ..Annotation::default()
        });
    }
    out
}

fn clamp(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX - 1)
}

impl Page {
    /// Renders porcupine-rs's view of a search, annotated with the history's faults and
    /// critical sections.
    pub fn render<S: Spec>(
        mut info: LinearizationInfo<SpecModel<S>>,
        paired: &Paired,
        reentrant: bool,
    ) -> Page {
        info.add_annotations(annotations(paired, reentrant));
        let mut raw = Vec::new();
        let html = match porcupine_rs::visualize::<SpecModel<S>, _>(&info, &mut raw) {
            Ok(()) => neutralize_data(&String::from_utf8_lossy(&raw)),
            Err(e) => format!(
                "<!doctype html><title>locklab</title><p>could not render the visualization: {}</p>",
                escape(&e.to_string())
            ),
        };
        Page { html }
    }
}
