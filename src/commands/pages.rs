//! Writing the diagram pages (`explain --html`, `check --html`, `report`).

use std::path::Path;

use locklab_models::catalog::{self, Overrides, Report, Scenario};
use locklab_traces::diagram::model_page;

use crate::bad_input;
use crate::output::Format;

/// The model's page of `scenario` as checked in `report`.
pub fn model_html(
    scenario: &Scenario,
    report: &Report,
    overrides: &Overrides,
) -> Result<String, String> {
    let cast = catalog::cast(scenario.id, overrides).map_err(|e| e.to_string())?;
    Ok(model_page(scenario, report, &cast))
}

/// Writes `html` to `path`; a failure is reported (exit 2).
pub fn write_page(format: Format, path: &Path, html: &str) -> Result<(), u8> {
    std::fs::write(path, html)
        .map_err(|e| bad_input(format, &format!("--html {}: {e}", path.display())))
}

/// Writes the model's page of `report` to `path` (`--html` of `check` and `explain`).
pub fn write_model_page(
    format: Format,
    path: &Path,
    report: &Report,
    overrides: &Overrides,
) -> Result<(), u8> {
    let scenario = catalog::find(report.id).map_err(|e| bad_input(format, &e.to_string()))?;
    let html = model_html(&scenario, report, overrides).map_err(|e| bad_input(format, &e))?;
    write_page(format, path, &html)
}
