//! `wakeprobe report DIR...`: judge saved runs again and re-render every report (and a
//! history's `history.md` and `history.svg`), without running anything. A folder that was not completely written is skipped with a warning.

use std::path::Path;

use super::invocation::{self, Judging, Outputs, Ran, load_runs};
use super::{AppError, AppResult};
use crate::cli;
use crate::store;
use crate::store::redact::Redactor;
use crate::store::saved;

/// `wakeprobe report DIR...`
pub fn report(args: &cli::ReportArgs) -> AppResult {
    let mut worst = crate::cli::Exit::Ok;
    for dir in &args.dirs {
        let ran = load_runs(dir, Judging::Again)?;
        for row in &ran.rows {
            let saved = saved::SavedRun::load(&row.dir)?;
            crate::report::rerender(&saved, &row.result, None)?;
        }
        let summary = invocation::finish(
            &Outputs {
                dir,
                junit: None,
                table: true,
                // A single run's own folder holds no summary.
                summary: !dir.join("run.json").is_file(),
                index: true,
                extra_cases: &[],
            },
            &ran,
        )?;
        rebuild_matrix(dir, &ran)?;
        rerender_history(dir)?;
        eprintln!(
            "re-rendered {} in {}",
            crate::report::plural(ran.rows.len(), "run", "runs"),
            dir.display()
        );
        worst = worst.max(invocation::exit_code(&summary, &ran));
    }
    Ok(worst)
}

/// A history folder: `history.md` and `history.svg` are drawn again from `history.json`.
fn rerender_history(dir: &Path) -> Result<(), AppError> {
    let path = dir.join("history.json");
    if !path.is_file() {
        return Ok(());
    }
    let file = super::history::read_history(&path)?;
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    crate::matrix::history::assemble::write_files(dir, &run_id, &file)?;
    Ok(())
}

/// A matrix folder: its matrix is rebuilt from the re-judged runs too.
fn rebuild_matrix(dir: &Path, ran: &Ran) -> Result<(), AppError> {
    let Ok(bytes) = std::fs::read(dir.join("matrix.json")) else {
        return Ok(());
    };
    let Ok(old) = serde_json::from_slice::<crate::matrix::grid::Matrix>(&bytes) else {
        return Ok(());
    };
    let grid = crate::matrix::grid::Matrix::build(&ran.results(), &old.columns)
        .of_matrix(old.identity.clone(), old.shard);
    store::write_json(&dir.join("matrix.json"), &Redactor::basic(), &grid)?;
    store::write_atomic(&dir.join("matrix.md"), grid.markdown(None).as_bytes())?;
    Ok(())
}
