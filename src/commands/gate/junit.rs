//! The gate's results as JUnit XML, the format CI dashboards (GitHub Actions' test
//! reporters, GitLab's `artifacts:reports:junit`, Jenkins) read: one `testsuite` per
//! scenario, one `testcase` per requirement; a broken requirement is a `failure`, an
//! unknown one or a scenario that could not run an `error`.

use std::fmt::Write;

use locklab_traces::escape::escape;

use super::verdict::Result;
use super::ScenarioOutcome;

/// Escapes text for XML content and attribute values (HTML's escaping is XML's too);
/// characters XML 1.0 cannot carry at all (control characters but tab and newlines)
/// become U+FFFD.
fn xml(text: &str) -> String {
    let carried: String = text
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect();
    escape(&carried)
}

/// The document for `name`'s gate over `scenarios`.
pub fn document(name: &str, scenarios: &[ScenarioOutcome]) -> String {
    let count = |r: Result| {
        scenarios
            .iter()
            .flat_map(|s| &s.requirements)
            .filter(|j| j.result == r)
            .count()
    };
    let tests: usize = scenarios.iter().map(|s| s.requirements.len()).sum();
    let seconds: f64 = scenarios.iter().map(|s| s.wall_ms as f64 / 1000.0).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{}\" errors=\"{}\" time=\"{seconds:.3}\">",
        xml(&format!("locklab gate: {name}")),
        count(Result::Fail),
        count(Result::Error) + count(Result::Unknown),
    );
    for s in scenarios {
        let fails = s
            .requirements
            .iter()
            .filter(|j| j.result == Result::Fail)
            .count();
        let errors = s
            .requirements
            .iter()
            .filter(|j| matches!(j.result, Result::Error | Result::Unknown))
            .count();
        // Random rounds of one scenario are suites of their own, told apart by seed.
        let suite = match s.nemesis {
            Some(_) => format!("{} (random, seed {})", s.id, s.seed),
            None => s.id.clone(),
        };
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{fails}\" errors=\"{errors}\" time=\"{:.3}\">",
            xml(&suite),
            s.requirements.len(),
            s.wall_ms as f64 / 1000.0
        );
        for j in &s.requirements {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
                xml(&format!("locklab.{suite}")),
                xml(j.requirement.name())
            );
            let (tag, kind) = match j.result {
                Result::Pass => ("", ""),
                Result::Fail => ("failure", "violation"),
                Result::Unknown => ("error", "unknown"),
                Result::Error => ("error", "run-error"),
            };
            if !tag.is_empty() {
                let _ = write!(
                    out,
                    "\n      <{tag} message=\"{}\" type=\"{kind}\">{}</{tag}>\n    ",
                    xml(&format!("{} {}: {}", s.id, j.requirement.name(), j.summary)),
                    xml(&j.details)
                );
            }
            // What the requirement said, and every violation it did not ask about: a
            // pass with a violation beside it is never silent.
            let mut said = format!("{}\n", j.summary);
            for a in &j.also_found {
                let _ = writeln!(said, "also found (not part of this requirement): {a}");
            }
            let _ = write!(out, "\n      <system-out>{}</system-out>\n    ", xml(&said));
            out.push_str("</testcase>\n");
        }
        let mut said = String::new();
        if let Some(h) = &s.history {
            let _ = writeln!(said, "history: {}", h.display());
        }
        if let Some(p) = &s.page {
            let _ = writeln!(said, "run page: {}", p.display());
        }
        for p in &s.client_problems {
            let _ = writeln!(said, "client problem ({}): {}", p.problem.name(), p.detail);
        }
        if !said.is_empty() {
            let _ = writeln!(out, "    <system-out>{}</system-out>", xml(&said));
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_unwritable_characters_replaced() {
        assert_eq!(
            xml("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(xml("x\u{1}y\nz"), "x\u{FFFD}y\nz");
    }
}
