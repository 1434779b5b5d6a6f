//! Exporters (terminal table, JSON, Markdown issue draft, JUnit, swimlane picture) and
//! redaction. Nothing here runs anything: every report is a function of saved evidence.

pub mod json;
pub mod junit;
pub mod redact;
pub mod store;
pub mod terminal;

use std::path::Path;

use crate::evidence::Timeline;
use crate::scenario::Plan;
use json::RunResult;
use redact::Redactor;

/// Writes every per-run report next to the run's evidence: `result.json` (and the Markdown
/// draft and picture once they exist for this run).
pub fn write_run_reports(
    dir: &Path,
    redactor: &Redactor,
    result: &RunResult,
    _timeline: &Timeline,
    _plan: &Plan,
) -> Result<(), store::StoreError> {
    store::write_json(&dir.join("result.json"), redactor, result)
}
