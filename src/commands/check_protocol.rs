//! `locklab check --protocol FILE [ENV] [--progress]`: model-check a user's protocol
//! file in one of its family's environments, or in each, and print every verdict with
//! the shortest story of each violated property (and, asked, each environment's
//! progress promises, with the lasso of each broken one).

use locklab_models::catalog::{Report, Verdict};
use locklab_models::progress;
use locklab_models::protocol::{self, Environment};

use super::check::{answer, headline, progress_text, story_text, word_code, ProtocolRequest};
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
    match format {
        Format::Json => crate::output::print_json(&crate::documents::ProtocolChecked {
            verdict: worst(&reports, &promises, progress),
            protocol: described.name(),
            file: file.to_path_buf(),
            reports: reports
                .iter()
                .zip(&promises)
                .map(|(r, p)| {
                    crate::documents::ProtocolReport::new(
                        r,
                        progress.then_some(p.as_slice()),
                        hint(&described, r),
                    )
                })
                .collect(),
        }),
        Format::Text => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                let p = progress.then_some(promises[i].as_slice());
                print!("{}", headline(r, p, false));
                if let Some(h) = hint(&described, r) {
                    println!("  hint: {h}");
                }
                for s in &r.stories {
                    print!("\n{}", story_text(s));
                }
                if progress {
                    print!("{}", progress_text(&promises[i]));
                }
            }
        }
    }
    word_code(worst(&reports, &promises, progress))
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
        .map(|(r, p)| answer(r, progress.then_some(p.as_slice())))
        .max()
        .unwrap_or(locklab_models::registry::Verdict::Ok)
}
