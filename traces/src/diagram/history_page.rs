//! `check-history --html`: any history — a locklab run's or an imported one — drawn in
//! the same lanes as a run's page, under the checks' verdicts and the operations they
//! name. porcupine-rs's drawing of the linearizability search, when one ran, is a page
//! of its own beside it: its visual language is not ours, and it says no verdict.

use std::fmt::Write;

use super::page::document;
use super::run::run_diagram;
use super::run_page::run_section;
use crate::check::{Report, Verdict};
use crate::escape::escape;
use crate::format::History;

/// The verdict as a class of the page's style and its word.
fn verdict(v: Verdict) -> (&'static str, &'static str) {
    let class = match v {
        Verdict::Ok => "holds",
        Verdict::Violation => "violated",
        Verdict::Unknown => "muted",
    };
    (class, v.word())
}

/// The whole page for `history` as `report` judged it; `linearizability` is the file
/// name of porcupine-rs's page beside it, if written.
pub fn history_page(history: &History, report: &Report, linearizability: Option<&str>) -> String {
    let (cls, word) = verdict(report.verdict);
    let mut body = format!(
        "<header><h1>{} <span class=\"verdict {cls}\">{word}</span></h1>\
<dl class=\"facts\"><dt>Events</dt><dd>{}</dd><dt>Backend</dt><dd>{}</dd></dl></header>",
        escape(&report.source),
        history.events.len(),
        escape(&history.header.backend.to_string()),
    );
    for w in &report.warnings {
        let _ = write!(body, "<p class=\"muted\">warning: {}</p>", escape(w));
    }
    body.push_str(
        "<h2>What the checks say</h2><table class=\"cat\"><thead><tr><th>property</th>\
<th>verdict</th><th>why</th></tr></thead><tbody>",
    );
    for c in &report.checks {
        let (cls, word) = verdict(c.verdict);
        let mut why = escape(&c.summary);
        for line in &c.explanation {
            let _ = write!(why, "<br><span class=\"muted\">{}</span>", escape(line));
        }
        for op in &c.ops {
            let _ = write!(
                why,
                "<br><span class=\"mono\">line {}: {} {}</span>",
                op.line,
                escape(&op.process),
                escape(&op.description)
            );
        }
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"verdict {cls}\">{word}</td><td>{why}</td></tr>",
            escape(c.property.name())
        );
    }
    body.push_str("</tbody></table>");
    if !report.findings.is_empty() {
        body.push_str(
            "<h2>Findings <span class=\"muted\">(how the servers behaved; not part of the verdict)</span></h2>\
<table class=\"cat\"><tbody>",
        );
        for f in &report.findings {
            let (cls, word) = verdict(f.verdict);
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"verdict {cls}\">{word}</td><td>{}</td></tr>",
                escape(f.name),
                escape(&f.summary)
            );
        }
        body.push_str("</tbody></table>");
    }
    if let Some(l) = linearizability {
        let _ = write!(
            body,
            "<p>The linearizability search of this history, drawn by porcupine-rs: <a href=\"{0}\">{0}</a>.</p>",
            escape(l)
        );
    }
    body.push_str(&run_section(&run_diagram(history, report), "The history"));
    document(&format!("{} — {word} — locklab", report.source), &body)
}

#[cfg(test)]
mod tests {
    use super::history_page;
    use crate::check::{check_history, Options};
    use crate::import::parse_any;

    const EVIL: &str = "</script><img src=x onerror=alert(1)>";

    #[test]
    fn the_page_names_the_verdict_and_escapes_the_history() {
        let text = format!(
            "{{\"format\":\"locklab-history\",\"version\":1,\"protocol\":\"test\",\"backend\":\"simulated\"}}\n\
             {{\"process\":0,\"op\":\"write\",\"phase\":\"invoke\",\"time\":1,\"value\":1}}\n\
             {{\"process\":0,\"op\":\"write\",\"phase\":\"ok\",\"time\":2}}\n\
             {{\"process\":\"nemesis\",\"op\":\"nemesis\",\"phase\":\"info\",\"time\":3,\"value\":{{\"fault\":\"{k}\"}},\"note\":\"{k}\"}}\n\
             {{\"process\":1,\"op\":\"read\",\"phase\":\"invoke\",\"time\":4}}\n\
             {{\"process\":1,\"op\":\"read\",\"phase\":\"ok\",\"time\":5,\"value\":7}}\n",
            k = EVIL.replace('"', "\\\"")
        );
        let history = parse_any("evil.jsonl", &text, None).expect("the history parses");
        let report = check_history(&history, &Options::default()).expect("checked");
        let page = history_page(&history, &report, Some("evil.linearizability.html"));
        assert!(page.contains("VIOLATION"), "{page}");
        assert!(page.contains("evil.linearizability.html"));
        assert!(!page.contains("<img"), "markup from the history leaked");
        assert_eq!(page.matches("</script>").count(), 1, "only the page's own");
        assert!(page.contains("class=\"story run\""), "the lanes are drawn");
    }
}
