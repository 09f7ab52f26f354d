//! Writing the diagram pages (`explain --html`, `check --html`, `report`).

use std::path::Path;

use locklab_models::catalog::{self, Overrides, Report, Scenario};
use locklab_traces::diagram::model_page;

use crate::bad_input;
#[cfg(feature = "harness")]
use crate::commands::check_history::verdict_word;
use crate::output::Format;
#[cfg(feature = "harness")]
use locklab_jepsen::agreement::Answer;

/// The model's page of `scenario` as checked in `report`.
pub fn model_html(
    scenario: &Scenario,
    report: &Report,
    overrides: &Overrides,
    progress: Option<&[locklab_models::progress::Verdict]>,
) -> Result<String, String> {
    let cast = catalog::cast(scenario, overrides).map_err(|e| e.to_string())?;
    Ok(model_page(scenario, report, &cast, progress))
}

/// Writes `html` to `path` and says so; a failure is reported (exit 2).
pub fn write_page(format: Format, path: &Path, html: &str) -> Result<(), u8> {
    std::fs::write(path, html)
        .map_err(|e| bad_input(format, &format!("--html {}: {e}", path.display())))?;
    crate::output::wrote(format, path);
    Ok(())
}

/// Writes the model's page of `report` to `path` (`--html` of `check` and `explain`).
pub fn write_model_page(
    format: Format,
    path: &Path,
    report: &Report,
    overrides: &Overrides,
    progress: Option<&[locklab_models::progress::Verdict]>,
) -> Result<(), u8> {
    let scenario = catalog::find(report.id).map_err(|e| bad_input(format, &e.to_string()))?;
    let html =
        model_html(scenario, report, overrides, progress).map_err(|e| bad_input(format, &e))?;
    write_page(format, path, &html)
}

#[cfg(feature = "harness")]
/// The run's page: its lanes from the recorded history beside the model's diagram at
/// the same bounds (`replicas`, which the run's model report was checked at), with the
/// agreement table.
pub fn run_html(
    run: &locklab_jepsen::RunReport,
    replicas: Option<usize>,
    linearizability: Option<String>,
) -> Result<String, String> {
    use locklab_traces::diagram::{run_diagram, run_page, AgreementRow, RunSummary};
    let scenario = catalog::find(&run.id).map_err(|e| e.to_string())?;
    let overrides = Overrides {
        replicas,
        ..Overrides::default()
    };
    // The model report the run was held against, carried in the run: not checked again.
    let model = &run.model;
    let cast = catalog::cast(scenario, &overrides).map_err(|e| e.to_string())?;
    let Some(history) = &run.recorded else {
        return Err("the run kept no history to draw".into());
    };
    let word = |v: locklab_traces::check::Verdict| verdict_word(v).to_string();
    let summary = RunSummary {
        seed: run.seed,
        clients: run.clients,
        events: run.events,
        topology: run.topology.clone(),
        story: run.story.clone(),
        verdict: word(run.agreement.verdict),
        agrees: match run.agreement.exact {
            Answer::Yes => Some(true),
            Answer::No => Some(false),
            Answer::Unknown => None,
        },
        standing: run.agreement.standing(),
        notes: run
            .agreement
            .unknown_because
            .iter()
            .map(|w| format!("Unknown because {w}."))
            .chain(run.agreement.also_found.iter().map(|a| {
                format!(
                    "Also found: {} VIOLATION — {} (not compared with the model for this scenario).",
                    a.check.name(),
                    a.summary
                )
            }))
            .collect(),
        rows: run
            .agreement
            .rows
            .iter()
            .map(|r| AgreementRow {
                property: r.property.to_string(),
                model: if r.model_violated {
                    "violated"
                } else {
                    "holds"
                }
                .into(),
                run: r.observed.map_or("not observable in a run".into(), word),
                verdict: r.mark().into(),
            })
            .collect(),
        linearizability,
    };
    let diagram = run_diagram(history, &run.report);
    Ok(run_page(scenario, model, &cast, &summary, &diagram))
}

#[cfg(feature = "harness")]
/// Writes a run's page to `path` and porcupine-rs's page of its linearizability
/// search beside it (`<stem>.linearizability.html`, linked from the run's page).
pub fn write_run_pages(
    path: &Path,
    run: &locklab_jepsen::RunReport,
    replicas: Option<usize>,
) -> Result<Vec<std::path::PathBuf>, String> {
    let write = |p: &Path, html: &str| {
        std::fs::write(p, html).map_err(|e| format!("--html {}: {e}", p.display()))
    };
    let mut link = None;
    let mut wrote = Vec::new();
    if let Some(page) = &run.report.html {
        let name = format!(
            "{}.linearizability.html",
            path.file_stem()
                .map_or("run".into(), |s| s.to_string_lossy())
        );
        let beside = path.with_file_name(&name);
        write(&beside, &page.html)?;
        wrote.push(beside);
        link = Some(name);
    }
    let html = run_html(run, replicas, link)?;
    write(path, &html)?;
    wrote.insert(0, path.to_path_buf());
    Ok(wrote)
}
