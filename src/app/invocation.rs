//! What every invocation leaves at its end, written by one function for `run`, `matrix`,
//! `merge`, `report` and `conform`: `summary.json`, the drafts of repeated cells (which now
//! know the agreement of all repetitions), JUnit when asked, the terminal table with one line
//! per run worth reading, and the exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{AppError, resolve};
use crate::classify::result::{RunResult, SetupError, Summary};
use crate::cli::{ExecArgs, Exit};
use crate::console;
use crate::evidence::Timeline;
use crate::matrix::{self, Execution, Job, SetupFailure};
use crate::report::html;
use crate::scenario::Scenario;
use crate::store;
use crate::store::redact::Redactor;
use crate::store::saved;

/// One judged run of the invocation: its result, its timeline, its folder.
pub struct Row {
    pub result: RunResult,
    pub timeline: Timeline,
    pub dir: PathBuf,
}

/// What the invocation ran.
pub struct Ran {
    pub rows: Vec<Row>,
    pub failures: Vec<SetupFailure>,
    pub interrupted: bool,
}

/// Runs an invocation's jobs into `run_dir`, to their end or to a signal.
pub async fn execute(
    jobs: Vec<Job>,
    exec: &ExecArgs,
    scenarios: &[Arc<Scenario>],
    run_dir: &Path,
) -> Result<Ran, AppError> {
    let opts = resolve::exec_options(exec, scenarios, run_dir.to_path_buf())?;
    let cancel = resolve::cancel_on_signals();
    let execution = matrix::execute(jobs, &opts, cancel.clone()).await;
    let interrupted = cancel.borrow().is_some();
    Ok(Ran::from_execution(execution, interrupted))
}

impl Ran {
    pub fn from_execution(execution: Execution, interrupted: bool) -> Ran {
        Ran {
            rows: execution
                .cells
                .into_iter()
                .map(|c| Row {
                    result: c.result,
                    timeline: c.timeline,
                    dir: c.dir,
                })
                .collect(),
            failures: execution.failures,
            interrupted,
        }
    }

    pub fn results(&self) -> Vec<RunResult> {
        self.rows.iter().map(|r| r.result.clone()).collect()
    }
}

/// Where and how the invocation's outputs go.
pub struct Outputs<'a> {
    /// The folder `summary.json` goes in (run folders are named relative to it).
    pub dir: &'a Path,
    pub junit: Option<&'a Path>,
    /// Print the table and the runs worth reading (matrix prints its own grid instead).
    pub table: bool,
    /// Write `summary.json` (not when `dir` is a single run's own folder).
    pub summary: bool,
    /// Write `index.html` with the summary (false when the caller adds files the page links
    /// to, and writes it once they are there).
    pub index: bool,
    /// JUnit cases beyond the cells (conformance comparisons, a bisection's finding).
    pub extra_cases: &'a [crate::classify::result::ExtraCase],
}

/// A matrix compared with a baseline: every cell of the summary is marked against it.
pub struct Baseline<'a> {
    pub comparison: &'a crate::matrix::grid::Comparison,
    /// The matrix of what ran, the one compared.
    pub current: &'a crate::matrix::grid::Matrix,
    /// The baseline file, as the marks name it.
    pub file: &'a str,
}

/// What a matrix adds to its summary: its columns in order, and what an incomplete merge lacks.
pub struct MatrixParts {
    pub columns: Vec<crate::classify::result::ColumnHead>,
    pub missing: Vec<crate::classify::result::MissingPart>,
}

/// Writes the invocation's outputs and prints its table; returns the summary.
pub fn finish(out: &Outputs, ran: &Ran) -> Result<Summary, AppError> {
    finish_against(out, ran, None, None)
}

/// [`finish`], with each cell marked against `baseline` when there is one: the summary, the
/// JUnit file and the table all say regression, improvement, unchanged, new or lost; a matrix's
/// columns and missing parts go into the summary.
pub fn finish_against(
    out: &Outputs,
    ran: &Ran,
    baseline: Option<&Baseline>,
    matrix: Option<&MatrixParts>,
) -> Result<Summary, AppError> {
    let errors: Vec<SetupError> = ran.failures.iter().map(setup_error).collect();
    // Said first: a disk too full for the summary must not hide why the runs failed.
    for failure in &errors {
        eprintln!(
            "wakeprobe: {}/{} on {}: setup failed: {}",
            failure.scenario,
            failure.variant,
            failure.cli,
            console::printable(&failure.message)
        );
    }
    let mut summary = summarize(out.dir, ran, &errors);
    if let Some(b) = baseline {
        b.comparison.mark_summary(&mut summary, b.current, b.file);
    }
    if let Some(m) = matrix {
        summary.columns = m.columns.clone();
        summary.missing = m.missing.clone();
    }
    rerender_repeated(out, &summary, ran)?;
    if out.summary {
        store::write_json(&out.dir.join("summary.json"), &Redactor::basic(), &summary)?;
        if out.index {
            write_index(out.dir, &summary, ran)?;
        }
    }
    if let Some(path) = out.junit {
        let results: Vec<&RunResult> = ran.rows.iter().map(|r| &r.result).collect();
        store::write_atomic(
            path,
            crate::report::junit::render(&summary, &results, out.extra_cases).as_bytes(),
        )?;
        super::aborted::junit_written();
    }
    if out.table {
        print_table(&summary, ran);
    }
    eprintln!(
        "reports: {}",
        console::printable(&out.dir.display().to_string())
    );
    Ok(summary)
}

/// The summary of what ran, its run folders named relative to `dir`.
pub fn summarize(dir: &Path, ran: &Ran, errors: &[SetupError]) -> Summary {
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let rows: Vec<(RunResult, String)> = ran
        .rows
        .iter()
        .map(|r| {
            let rel = r.dir.strip_prefix(dir).unwrap_or(&r.dir);
            (r.result.clone(), rel.display().to_string())
        })
        .collect();
    Summary::build(&run_id, &rows, errors, ran.interrupted)
}

/// Writes the folder's `index.html` (again, after files it links to were added).
pub fn write_index(dir: &Path, summary: &Summary, ran: &Ran) -> Result<(), AppError> {
    let runs: Vec<crate::store::RunRef> = ran
        .rows
        .iter()
        .map(|r| crate::store::RunRef {
            dir: &r.dir,
            result: &r.result,
            timeline: &r.timeline,
        })
        .collect();
    html::write_index(dir, summary, &runs)?;
    Ok(())
}

fn setup_error(f: &SetupFailure) -> SetupError {
    SetupError {
        scenario: f.job.scenario.name.clone(),
        variant: f.job.variant.clone(),
        cli: f.job.cli.label(),
        message: f.message.clone(),
    }
}

/// Repeated cells: their drafts now know the agreement of all repetitions. Only folders of
/// this invocation are rewritten (`merge` leaves its shards as they are).
fn rerender_repeated(out: &Outputs, summary: &Summary, ran: &Ran) -> Result<(), AppError> {
    for cell in summary.cells.iter().filter(|c| c.runs > 1) {
        for row in ran.rows.iter().filter(|r| {
            r.result.run.scenario == cell.scenario
                && r.result.run.variant == cell.variant
                && r.result.run.cli_label == cell.cli
                && r.dir.starts_with(out.dir)
        }) {
            let saved = saved::SavedRun::load(&row.dir)?;
            crate::report::rerender(&saved, &row.result, Some(&cell.agreement))?;
        }
    }
    Ok(())
}

fn print_table(summary: &Summary, ran: &Ran) {
    let color = console::human_is_terminal();
    let pairs: Vec<(&RunResult, &Timeline)> =
        ran.rows.iter().map(|r| (&r.result, &r.timeline)).collect();
    let width = console::human_width().unwrap_or(crate::report::terminal::DEFAULT_WIDTH);
    console::say(crate::report::terminal::summary(
        summary, &pairs, color, width,
    ));
    let mut told = std::collections::BTreeSet::new();
    for row in &ran.rows {
        let filed = crate::classify::filing::filing(&row.result.run, &row.result.judgement)
            == crate::classify::filing::Filing::Bug;
        let failed = row.result.matches_expect == Some(false);
        // A cell's verdict lines once (check names and what they observed are the scenario's
        // own text), then why each of its repetitions failed or has a draft; a draft's `gh`
        // line once per cell.
        if (failed || filed || ran.rows.len() == 1) && told.insert(row.result.cell_key()) {
            let lines = crate::report::terminal::verdict_lines(&row.result);
            console::say(console::printable_lines(&lines));
            if filed {
                let runtime = row.result.run.backend.runtime();
                let draft = format!(
                    "issue draft: {}",
                    crate::report::issue_command(&row.dir, runtime)
                );
                console::say(console::printable(&draft));
            }
        }
        for why in crate::report::why_lines(&row.result) {
            console::say(console::printable(&format!("  {why}")));
        }
    }
    if let Some(lines) = crate::report::terminal::invariant_lines(summary) {
        console::say(console::printable_lines(&lines));
    }
}

/// The invocation's closing line ("N passed, N failed (N regressions)") for a human, and the
/// `summary` message that ends its JSON output.
pub fn emit_summary(dir: &Path, matrix: Option<&Path>, summary: &Summary, exit: Exit) {
    console::say(summary.closing_line());
    console::emit(&console::Message::Summary {
        dir: dir.display().to_string(),
        matrix: matrix.map(|m| m.display().to_string()),
        summary,
        exit_code: exit.code(),
        error: None,
    });
}

/// The documented exit code for what ran: interrupted, then a verdict that contradicts its own
/// timeline, then a setup failure, then a mismatch.
pub fn exit_code(summary: &Summary, ran: &Ran) -> Exit {
    if ran.interrupted {
        Exit::Interrupted
    } else if summary.contradicted_runs() > 0 {
        Exit::Contradiction
    } else if !ran.failures.is_empty() {
        Exit::Setup
    } else if summary.all_match() {
        Exit::Ok
    } else {
        Exit::Mismatch
    }
}

/// Which result a saved run is taken with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judging {
    /// Judged again from its evidence (`report`, `merge`).
    Again,
    /// The result its reports were written from (`view`).
    AsWritten,
}

/// Every complete run under `dir` with its result; incomplete ones are named and skipped.
pub fn load_runs(dir: &Path, judging: Judging) -> Result<Ran, AppError> {
    let mut rows = Vec::new();
    for run in saved::find_runs(dir)? {
        match saved::SavedRun::load(&run) {
            Ok(saved) => {
                let result = match judging {
                    Judging::Again => saved.judge(),
                    Judging::AsWritten => saved.written_result(),
                };
                rows.push(Row {
                    result,
                    timeline: saved.timeline,
                    dir: run,
                });
            }
            Err(e @ saved::SavedError::Incomplete { .. }) => eprintln!("wakeprobe: warning: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Ran {
        rows,
        failures: vec![],
        interrupted: false,
    })
}
