//! `wakeprobe run` and `wakeprobe list`, and what every invocation does at its end: the
//! summary, JUnit, the repeated cells' agreement in their drafts, the table.

use std::path::Path;

use super::*;
use crate::cli::{self, exit};
use crate::matrix;

/// `wakeprobe run`
pub async fn run(args: cli::RunArgs) -> AppResult {
    let scenarios = resolve_scenarios(&args.scenarios)?;
    let cli = resolve_cli(&args.backend).await?;
    let jobs = jobs_for(&scenarios, &args.exec, &cli)?;
    let run_dir = run_dir(&args.exec.out);
    let opts = exec_options(&args.exec, &scenarios, run_dir.clone())?;
    let cancel = cancel_on_signals();
    let results = matrix::execute(jobs, &opts, cancel.clone()).await?;
    let interrupted = *cancel.borrow();
    let summary = finish_invocation(
        &run_dir,
        &results,
        interrupted,
        args.exec.junit.as_deref(),
        true,
    )?;
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    Ok(if summary.all_match() {
        exit::OK
    } else {
        exit::MISMATCH
    })
}

/// Writes `summary.json` (and JUnit when asked), prints the table; returns the summary.
pub fn finish_invocation(
    run_dir: &Path,
    results: &[matrix::CellResult],
    interrupted: bool,
    junit: Option<&Path>,
    print_table: bool,
) -> Result<crate::report::json::Summary, AppError> {
    use crate::report::{json::Summary, redact::Redactor, store};
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let rows: Vec<(crate::report::json::RunResult, String)> = results
        .iter()
        .map(|c| (c.result.clone(), c.job.folder().display().to_string()))
        .collect();
    let summary = Summary::build(&run_id, &rows, interrupted);
    store::write_json(&run_dir.join("summary.json"), &Redactor::basic(), &summary)
        .map_err(|e| AppError::setup(e.to_string()))?;
    // Repeated cells: their drafts now know the agreement of all repetitions.
    for cell in summary.cells.iter().filter(|c| c.runs > 1) {
        for dir in &cell.dirs {
            let saved = crate::report::saved::SavedRun::load(&run_dir.join(dir))
                .map_err(|e| AppError::setup(e.to_string()))?;
            let result = saved.judge();
            saved
                .rerender(&result, Some(&cell.agreement))
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
    }
    if let Some(path) = junit {
        let xml = crate::report::junit::render(
            &summary,
            &rows.iter().map(|(r, _)| r).collect::<Vec<_>>(),
        );
        store::write_atomic(path, xml.as_bytes()).map_err(|e| AppError::setup(e.to_string()))?;
    }
    if !print_table {
        return Ok(summary);
    }
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let pairs: Vec<(&crate::report::json::RunResult, &crate::evidence::Timeline)> = results
        .iter()
        .map(|c| (&c.result, &c.record.timeline))
        .collect();
    println!(
        "{}",
        crate::report::terminal::summary(&summary, &pairs, color)
    );
    for c in results {
        if let Some(v) = c.result.judgement.primary()
            && (c.result.matches_expect == Some(false) || results.len() == 1)
        {
            println!(
                "{}/{} on {}: {} ({})",
                c.result.run.scenario,
                c.result.run.variant,
                c.result.run.cli_label,
                v.outcome,
                v.outcome.hypothesis()
            );
            println!("  {}", v.explanation);
        }
    }
    eprintln!("reports: {}", run_dir.display());
    Ok(summary)
}

/// `wakeprobe list`
pub fn list(args: &cli::ListArgs) -> AppResult {
    let dir = if args.dir.is_dir() {
        args.dir.clone()
    } else {
        scenarios_dir()
    };
    let scenarios = scenario::load_dir(&dir)?;
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["scenario", "seed", "variants", "summary"]);
    for s in &scenarios {
        table.add_row([
            s.name.clone(),
            s.seed.clone().unwrap_or_else(|| "-".into()),
            s.variants().join(", "),
            s.summary.clone(),
        ]);
    }
    println!("{table}");
    Ok(exit::OK)
}
