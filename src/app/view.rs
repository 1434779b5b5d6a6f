//! `wakeprobe view DIR...`: writes the self-contained `index.html` of saved invocation folders
//! (the one `run`, `matrix`, `merge` and `report` also write), from each run's saved result and
//! timeline, without judging or running anything.

use std::path::Path;

use super::invocation::{self, Ran, Row};
use super::{AppError, AppResult};
use crate::cli;
use crate::report::json::Summary;
use crate::report::{html, saved};

/// `wakeprobe view DIR...`
pub fn view(args: &cli::ViewArgs) -> AppResult {
    for dir in &args.dirs {
        let ran = saved_runs(dir)?;
        let stored = read_summary(dir);
        let errors = stored
            .as_ref()
            .map(|s| s.setup_errors.clone())
            .unwrap_or_default();
        let mut summary = invocation::summarize(dir, &ran, &errors);
        summary.interrupted = stored.is_some_and(|s| s.interrupted);
        invocation::write_index(dir, &summary, &ran)?;
        println!("{}", dir.join(html::INDEX_FILE).display());
    }
    Ok(cli::exit::OK)
}

/// Every complete run under `dir` with the result its reports show; incomplete ones are named
/// and skipped.
fn saved_runs(dir: &Path) -> Result<Ran, AppError> {
    let mut rows = Vec::new();
    for run in saved::find_runs(dir)? {
        match saved::SavedRun::load(&run) {
            Ok(saved) => rows.push(Row {
                result: saved.written_result(),
                timeline: saved.timeline,
                dir: run,
            }),
            Err(e @ saved::SavedError::Incomplete(_)) => eprintln!("wakeprobe: warning: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Ran {
        rows,
        failures: vec![],
        interrupted: false,
    })
}

/// The folder's `summary.json`, for what only it knows (setup errors, an interruption).
fn read_summary(dir: &Path) -> Option<Summary> {
    let bytes = std::fs::read(dir.join("summary.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}
