//! `wakeprobe report DIR...`: judge saved runs again and re-render their reports.

use super::*;
use crate::cli::{self, exit};

/// `wakeprobe report DIR...`: judge saved runs again and re-render every report.
pub fn report(args: &cli::ReportArgs) -> AppResult {
    use crate::report::{json::Summary, redact::Redactor, saved, store};
    let mut all_match = true;
    for dir in &args.dirs {
        let runs = saved::find_runs(dir).map_err(|e| AppError::bad_input(e.to_string()))?;
        let mut loaded = Vec::new();
        for run in &runs {
            let saved =
                saved::SavedRun::load(run).map_err(|e| AppError::bad_input(e.to_string()))?;
            let result = saved.judge();
            loaded.push((saved, result));
        }
        let rows: Vec<(crate::report::json::RunResult, String)> = loaded
            .iter()
            .map(|(s, r)| {
                (
                    r.clone(),
                    s.dir
                        .strip_prefix(dir)
                        .unwrap_or(&s.dir)
                        .display()
                        .to_string(),
                )
            })
            .collect();
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let summary = Summary::build(&run_id, &rows, false);
        for (saved, result) in &loaded {
            let cell = summary.cells.iter().find(|c| {
                c.scenario == result.run.scenario
                    && c.variant == result.run.variant
                    && c.cli == result.run.cli_label
            });
            let agreement = cell.filter(|c| c.runs > 1).map(|c| c.agreement.as_str());
            saved
                .rerender(result, agreement)
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
        if runs.len() > 1 || dir.join("summary.json").exists() {
            store::write_json(&dir.join("summary.json"), &Redactor::basic(), &summary)
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
        // A matrix folder: its matrix is rebuilt from the re-judged runs too.
        if let Ok(bytes) = std::fs::read(dir.join("matrix.json"))
            && let Ok(old) = serde_json::from_slice::<crate::matrix::grid::Matrix>(&bytes)
        {
            let results: Vec<crate::report::json::RunResult> =
                loaded.iter().map(|(_, r)| r.clone()).collect();
            let grid = crate::matrix::grid::Matrix::build(&results, &old.columns);
            store::write_json(&dir.join("matrix.json"), &Redactor::basic(), &grid)
                .map_err(|e| AppError::setup(e.to_string()))?;
            store::write_atomic(&dir.join("matrix.md"), grid.markdown(None).as_bytes())
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
        let pairs: Vec<(&crate::report::json::RunResult, &crate::evidence::Timeline)> =
            loaded.iter().map(|(s, r)| (r, &s.timeline)).collect();
        let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
        println!(
            "{}",
            crate::report::terminal::summary(&summary, &pairs, color)
        );
        eprintln!("re-rendered {} run(s) in {}", runs.len(), dir.display());
        all_match &= summary.all_match();
    }
    Ok(if all_match { exit::OK } else { exit::MISMATCH })
}
