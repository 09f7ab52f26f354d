//! Every command's text, coloured: generated text with non-ASCII characters and verdict
//! words in every field a user controls goes through the text paths with colour forced
//! on, and comes out whole. Colour is added in one place ([`crate::output::paint`]), so
//! the painter over any text covers `run`, `gate` and `bench` too; the paths here build
//! their text from a real check of a generated history and a real model report.

use locklab_models::catalog::{self, Overrides};
use locklab_models::check::Limits;
use locklab_traces::check::{check_history, Options, Selection};
use proptest::prelude::*;

use crate::output::coloured;
use crate::output::tests::plain;

/// Text a user controls: verdict words, separators the painter looks at, non-ASCII of
/// one to four bytes, anything else.
fn field() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("VIOLATED".to_string()),
            Just("VIOLATION".to_string()),
            Just("OK".to_string()),
            Just("HOLDS".to_string()),
            Just("UNKNOWN".to_string()),
            Just(": ".to_string()),
            "[–→é✓锁🔒 a-zA-Z0-9:]{0,4}",
            any::<String>(),
        ],
        1..6,
    )
    .prop_map(|parts| {
        // Control characters are escaped by the history's own JSON; a newline would end
        // the line the history reader reads.
        parts.concat().chars().filter(|c| !c.is_control()).collect()
    })
}

/// A history whose protocol, key and note are `f`: two clients, one lock, both granted
/// one after the other, or at once (a violation) when `overlap`.
fn history(f: &str, overlap: bool) -> String {
    let f = serde_json::Value::String(f.to_string());
    let (grant1, release0) = if overlap { (3, 4) } else { (4, 3) };
    let event = |p: u32, op: &str, phase: &str, t: u64| {
        format!(
            r#"{{"process":{p},"op":"{op}","phase":"{phase}","time":{t},"key":{f},"note":{f}}}"#
        )
    };
    [
        format!(
            r#"{{"format":"locklab-history","version":1,"protocol":{f},"backend":"simulated"}}"#
        ),
        event(0, "acquire", "invoke", 1),
        event(0, "acquire", "ok", 2),
        event(1, "acquire", "invoke", 2),
        event(1, "acquire", "ok", grant1),
        event(0, "release", "invoke", release0),
        event(0, "release", "ok", release0),
        event(1, "release", "invoke", 5),
        event(1, "release", "ok", 6),
    ]
    .join("\n")
}

/// A model report of the failover row, judged once for every case.
fn failover() -> &'static catalog::Report {
    static REPORT: std::sync::OnceLock<catalog::Report> = std::sync::OnceLock::new();
    REPORT.get_or_init(|| {
        catalog::check(
            "redis-failover",
            &Overrides::default(),
            Limits::default(),
            &mut |_| {},
        )
        .expect("the failover row checks")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// `check-history` (and `run`'s checks, which print the same text) and `check`'s
    /// headline and stories: coloured, nothing but colour codes added, never a panic.
    #[test]
    fn every_text_path_survives_colour(f in field(), source in field(), overlap: bool) {
        let text = history(&f, overlap);
        let parsed = locklab_traces::reader::parse(&source, &text);
        let history = parsed.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let options = Options {
            selection: Selection::parse("auto", None, &history.header)
                .ok_or_else(|| TestCaseError::fail("auto is a model"))?,
            timeout: Some(std::time::Duration::from_secs(10)),
            memory: None,
            html: false,
            initial: None,
        };
        let report = check_history(&history, &options)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let out = super::check_history::text(&report);
        prop_assert_eq!(plain(&coloured(&out)), out);
        // A user's protocol's name is the report's id (`check --protocol`).
        let mut model = failover().clone();
        model.id = Box::leak(f.clone().into_boxed_str());
        let mut out = super::check::headline(&model, None, false);
        for s in &model.stories {
            out.push_str(&super::check::story_text(s));
        }
        prop_assert_eq!(plain(&coloured(&out)), out);
    }
}
