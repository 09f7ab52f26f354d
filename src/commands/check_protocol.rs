//! `locklab check --protocol FILE [ENV] [--progress]`: model-check a user's protocol
//! file in one of its family's environments, or in each, and print every verdict with
//! the shortest story of each violated property (and, asked, each environment's
//! progress promises, with the lasso of each broken one).

use locklab_models::catalog::{Report, Verdict};
use locklab_models::progress;
use locklab_models::protocol::particular::{particular, Particular};
use locklab_models::protocol::{self, Environment};
use locklab_models::registry::Property;

use super::check::{headline, progress_text, story_text, ProtocolRequest};
use crate::bad_input;
use crate::commands::pages::write_page;
use crate::output::{spinner, ErrorKind, Format};
use locklab_traces::diagram::model_page;

/// Runs the check; returns the exit code (the worst over the environments: a
/// violation, else an unknown, else 0).
pub fn run(request: ProtocolRequest<'_>) -> u8 {
    let ProtocolRequest {
        file,
        env,
        bounds,
        limits,
        progress,
        once,
        html,
        format,
    } = request;
    // A file that does not read or makes no sense is an input error, as a history is.
    let described = match protocol::load(file) {
        Ok(d) => d,
        Err(e) => return crate::output::error(format, ErrorKind::Input, &e.to_string()),
    };
    let envs: Vec<Environment> = match env {
        None => described.environments(),
        Some(name) => match protocol::check::environment(&described, name) {
            Ok(e) => vec![e],
            Err(e) => return bad_input(format, &e.to_string()),
        },
    };
    let mut reports: Vec<Report> = Vec::new();
    // Each environment's progress verdicts (empty where not asked).
    let mut promises: Vec<Vec<progress::Verdict>> = Vec::new();
    for e in &envs {
        let bar = spinner(
            format,
            &format!("checking {} in {}", described.name(), e.name),
        );
        let result = protocol::check_in(&described, e, &bounds.overrides(), limits, &mut |s| {
            bar.set_message(format!(
                "checking {} in {}: {} states, depth {}",
                described.name(),
                e.name,
                s.unique_states,
                s.max_depth
            ));
        });
        let judged = if progress {
            bar.set_message(format!(
                "judging the progress of {} in {}",
                described.name(),
                e.name
            ));
            let o = locklab_models::catalog::Overrides {
                once,
                ..bounds.overrides()
            };
            protocol::progress_in(&described, e, &o, limits).map(Option::unwrap_or_default)
        } else {
            Ok(Vec::new())
        };
        bar.finish_and_clear();
        match result.and_then(|r| Ok((r, judged?))) {
            Ok((r, p)) => {
                reports.push(r);
                promises.push(p);
            }
            Err(err) => return bad_input(format, &err.to_string()),
        }
    }
    if let Some(path) = html {
        for (i, e) in envs.iter().enumerate() {
            let page = page_path(path, &e.name, envs.len());
            let drawn = protocol::cast_in(&described, e, &bounds.overrides())
                .map_err(|err| err.to_string())
                .map(|(scenario, cast)| {
                    let p = progress.then_some(promises[i].as_slice());
                    model_page(&scenario, &reports[i], &cast, p)
                });
            match drawn {
                Ok(text) => {
                    if let Err(code) = write_page(format, &page, &text) {
                        return code;
                    }
                }
                Err(err) => return bad_input(format, &err),
            }
        }
    }
    // Each violation held against the family's sound recipe in the same environment.
    let mut particulars = Vec::new();
    for (e, r) in envs.iter().zip(&reports) {
        let bar = spinner(
            format,
            &format!(
                "holding {} in {} against the family's recipe",
                described.name(),
                e.name
            ),
        );
        let held = particular(&described, e, &bounds.overrides(), limits, r);
        bar.finish_and_clear();
        match held {
            Ok(p) => particulars.push(p),
            Err(err) => return bad_input(format, &err.to_string()),
        }
    }
    match format {
        Format::Json => crate::output::print_json(&crate::documents::ProtocolChecked {
            verdict: worst(&reports, &promises, progress),
            protocol: described.name(),
            file: file.to_path_buf(),
            reports: reports
                .iter()
                .zip(&promises)
                .zip(&particulars)
                .map(|((r, p), particular)| crate::documents::ProtocolReport {
                    searched: crate::documents::Searched::new(r, progress.then_some(p.as_slice())),
                    hint: hint(&described, r),
                    particular: particular.clone(),
                })
                .collect(),
        }),
        Format::Text => {
            print!("{}", lead(described.name(), &envs, &reports, &particulars));
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                let p = progress.then_some(promises[i].as_slice());
                print!("{}", headline(r, p, false));
                if let Some(h) = hint(&described, r) {
                    println!("  hint: {h}");
                }
                let own = particulars[i].as_ref().map_or(&[][..], |p| &p.own[..]);
                // The protocol's own breaks first: the shared ones are the family's.
                let mut stories: Vec<_> = r.stories.iter().collect();
                stories.sort_by_key(|s| !own.contains(&s.property));
                for s in stories {
                    print!("\n{}", story_text(s));
                    if own.contains(&s.property) {
                        if let Some(step) = own_step(s) {
                            println!("  The protocol's own step: {step}.");
                        }
                    }
                }
                if progress {
                    print!("{}", progress_text(&promises[i]));
                }
            }
        }
    }
    worst(&reports, &promises, progress).exit_code() as u8
}

/// What is particular to the protocol, before any environment's details: the
/// properties it breaks that its family's recipe keeps in the same environment, with
/// the step of its own each break rests on, then those every lock of the family breaks
/// there. Empty when nothing was broken, or in one environment with nothing of its own.
fn lead(
    name: &str,
    envs: &[Environment],
    reports: &[Report],
    particulars: &[Option<Particular>],
) -> String {
    let held: Vec<(&Environment, &Report, &Particular)> = envs
        .iter()
        .zip(reports)
        .zip(particulars)
        .filter_map(|((e, r), p)| p.as_ref().map(|p| (e, r, p)))
        .collect();
    let Some(reference) = held.first().map(|(_, _, p)| p.reference) else {
        return String::new();
    };
    // Each property with the environments it is broken in.
    let by_property = |pick: fn(&Particular) -> &[Property]| {
        let mut found: Vec<(Property, Vec<&str>)> = Vec::new();
        for (e, _, p) in &held {
            for q in pick(p) {
                match found.iter_mut().find(|(f, _)| f == q) {
                    Some((_, envs)) => envs.push(&e.name),
                    None => found.push((*q, vec![&e.name])),
                }
            }
        }
        found
    };
    let own = by_property(|p| &p.own);
    let shared = by_property(|p| &p.shared);
    let unmatched = by_property(|p| &p.unmatched);
    // One environment with nothing of its own: its headline says all there is.
    if envs.len() == 1 && own.is_empty() && unmatched.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "What is particular to {name}, held against {reference} (the catalog's sound recipe) in the same environments:\n"
    );
    if own.is_empty() && unmatched.is_empty() {
        out.push_str(&format!(
            "  nothing of its own: {reference} breaks whatever it breaks, in the same environments\n"
        ));
    }
    for (q, where_) in &own {
        out.push_str(&format!(
            "  its own: {q} VIOLATED in {} ({reference} keeps it there)\n",
            where_.join(", ")
        ));
        for (e, r, _) in held
            .iter()
            .filter(|(e, _, _)| where_.contains(&e.name.as_str()))
        {
            let step = r
                .stories
                .iter()
                .find(|s| s.property == *q)
                .and_then(own_step);
            if let Some(step) = step {
                out.push_str(&format!("    {}: {step}\n", e.name));
            }
        }
    }
    for (q, where_) in &unmatched {
        out.push_str(&format!(
            "  not held against it: {q} VIOLATED in {} ({reference}'s row states no {q})\n",
            where_.join(", ")
        ));
    }
    for (q, where_) in &shared {
        out.push_str(&format!(
            "  as every lock of the family: {q} in {} ({reference} breaks it there too)\n",
            where_.join(", ")
        ));
    }
    out.push('\n');
    out
}

/// The step of the client's own that a story's break rests on, in words: the command
/// that broke the property acted on what an earlier one of its own saw, and the steps
/// between made that stale.
fn own_step(s: &locklab_models::checkable::Story) -> Option<String> {
    let (acted, saw) = protocol::particular::stale_read(s)?;
    let action = |n: usize| s.steps.get(n - 1).map_or("", |step| step.action.as_str());
    let (client, did) = action(acted).split_once(": ")?;
    let seen = action(saw).split_once(": ").map_or("", |(_, a)| a);
    let between: Vec<String> = s
        .steps
        .iter()
        .filter(|step| step.n > saw && step.n < acted)
        .map(|step| format!("{} ({})", step.action, step.n))
        .collect();
    let between = match between.len() {
        0 => String::new(),
        1..=6 => format!("; between them: {}", between.join(", ")),
        n => format!(
            "; between them {n} steps, from {} to {}",
            between[0],
            between[n - 1]
        ),
    };
    Some(format!(
        "{client}'s {did} (step {acted}) acted on what its {seen} (step {saw}) saw{between}"
    ))
}

/// What to try when `r` is unknown, where the protocol suggests something.
fn hint(d: &protocol::Described, r: &Report) -> Option<&'static str> {
    // An inexact store's unknown is its own answer, not a limit to raise.
    (r.verdict == Verdict::Unknown && r.stopped_by.is_some())
        .then(|| d.unknown_hint())
        .flatten()
}

/// Where the page of environment `env` goes: `path` itself when it is the only one,
/// else beside it with the environment's name (`out.html` → `out-pause.html`).
fn page_path(path: &std::path::Path, env: &str, envs: usize) -> std::path::PathBuf {
    if envs == 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    path.with_file_name(format!("{stem}-{env}{ext}"))
}

/// The exit code of several verdicts and promises: a violation or a broken promise,
/// else an unknown, else 0.
fn worst(
    reports: &[Report],
    promises: &[Vec<progress::Verdict>],
    progress: bool,
) -> locklab_models::registry::Verdict {
    reports
        .iter()
        .zip(promises)
        .map(|(r, p)| r.answer(progress.then_some(p.as_slice())))
        .max()
        .unwrap_or(locklab_models::registry::Verdict::Ok)
}
