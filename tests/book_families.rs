//! The book's family pages (`docs/families/`), one per family, generated from the
//! catalog: its rows, their protocol, fault, properties, expected verdict and lesson,
//! and its pictures where the book has them. Stale, this test fails and says how to
//! write them again (`LOCKLAB_BLESS=1`), as `tests/cli_reference.rs` does for the CLI.

use std::path::{Path, PathBuf};

use locklab_models::catalog::{self, scenarios, Overrides};
use locklab_models::check::Limits;
use locklab_models::progress::{Kept, Promise};
use locklab_models::registry::Family;
use locklab_models::scenario::{Expected, Scenario};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")
}

fn expected(s: &Scenario) -> String {
    match s.expected {
        Expected::Holds => "holds".to_string(),
        Expected::Violates(p) => format!(
            "violates {}",
            p.iter().map(|p| p.name()).collect::<Vec<_>>().join(" + ")
        ),
    }
}

/// Catalog text as Markdown: `<ms timestamp>` is no HTML tag.
fn md(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

/// A table cell: one line, no column breaks.
fn cell(text: &str) -> String {
    md(text).replace('|', "\\|").replace('\n', " ")
}

/// The checker's word on each progress promise of row `id` at its default bounds (`-`
/// where the family states none, or the protocol orders no requests for `fifo`).
fn promises(id: &str) -> [String; 3] {
    let limits = Limits {
        threads: 1,
        ..Limits::default()
    };
    let verdicts = catalog::progress(id, &Overrides::default(), limits)
        .expect("a catalog row")
        .unwrap_or_default();
    [
        Promise::EventuallyFree,
        Promise::StarvationFree,
        Promise::Fifo,
    ]
    .map(|p| {
        verdicts
            .iter()
            .find(|v| v.promise == p)
            .map_or("-".to_string(), |v| {
                let word = match &v.kept {
                    Kept::Holds => "holds",
                    Kept::Violated { .. } => "**broken**",
                    Kept::Unknown { .. } => "unknown",
                };
                let once = p == Promise::StarvationFree && !v.repeating;
                format!("{word}{}", if once { " (once)" } else { "" })
            })
    })
}

fn page(family: Family, rows: &[&Scenario]) -> String {
    let mut p = format!(
        "# {}\n\n<!-- Generated from the catalog by tests/book_families.rs: `LOCKLAB_BLESS=1 cargo \
         test --test it book_families` writes it again. -->\n\n{}\n\n",
        family.title(),
        family.about()
    );
    let faults: Vec<&str> = family.faults().iter().map(|f| f.name()).collect();
    p.push_str(&format!(
        "Faults its models may inject: {}. Every row below is checked by `locklab matrix`; \
         `locklab explain ID` tells a row's shortest counterexample, `locklab report DIR \
         --only ID` draws it.\n\n",
        if faults.is_empty() {
            "none".to_string()
        } else {
            faults.join(", ")
        }
    ));
    p.push_str(
        "| Row | Protocol | Fault | Safety verdict | eventually-free | starvation-free | fifo |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for s in rows {
        let [free, starve, fifo] = promises(s.id.name());
        p.push_str(&format!(
            "| [`{id}`](#{id}) | {} | {} | {} | {free} | {starve} | {fifo} |\n",
            cell(s.protocol),
            cell(s.faults),
            expected(s),
            id = s.id
        ));
    }
    p.push_str(
        "\nThe progress columns are the checker's, at each row's default bounds under weak \
         fairness ([Progress verdicts](../PROGRESS.md)); `-`: not stated (no lock, or no \
         request order). `starvation-free` is judged with clients that lock again and again, \
         so that one may ask for ever while another takes the lock in turn; `(once)`: with \
         clients that lock once, where the row's model cannot start them over.\n",
    );
    for s in rows {
        p.push_str(&format!(
            "\n## {}\n\n**Protocol.** {}\n\n**Fault.** {}\n\n**Checks.** {}\n\n\
             **Model verdict** (default bounds: {} clients, lease {} ticks): {}.\n\n\
             **Lesson.** {}\n\n",
            s.id,
            md(s.protocol),
            md(s.faults),
            s.properties
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", "),
            s.defaults.clients,
            s.defaults.ttl,
            expected(s),
            md(s.lesson)
        ));
        for (kind, what) in [
            ("explain", "The model's counterexample"),
            ("run", "A real run"),
        ] {
            let img = format!("img/{kind}-{}.png", s.id);
            if docs().join(&img).exists() {
                p.push_str(&format!("![{what}, drawn](../{img})\n\n"));
            }
        }
        p.push_str(&format!("Try it: `locklab explain {}`\n", s.id));
    }
    p
}

#[test]
fn the_family_pages_are_the_catalog() {
    let all = scenarios();
    let dir = docs().join("families");
    let bless = std::env::var_os("LOCKLAB_BLESS").is_some();
    let mut stale = Vec::new();
    for family in Family::ALL {
        let rows: Vec<&Scenario> = all.iter().filter(|s| s.family == *family).collect();
        let path = dir.join(format!("{}.md", family.name()));
        let want = page(*family, &rows);
        if bless {
            std::fs::create_dir_all(&dir).expect("docs/families");
            std::fs::write(&path, &want).expect("writes the page");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale family pages {stale:?}: run `LOCKLAB_BLESS=1 cargo test --test it book_families`"
    );
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).expect("SUMMARY.md");
    for family in Family::ALL {
        assert!(
            summary.contains(&format!("(families/{}.md)", family.name())),
            "SUMMARY.md lists no page for {family}"
        );
    }
}
