//! The matrix's identity (what makes it this matrix, whichever shard runs) and the end
//! `matrix` and `merge` share: the baseline checked for how it was made, the runs'
//! outputs (summary, JUnit) compared with it, the matrix written and printed with the exit code
//! the comparison means, and the matrix files read back (a baseline, a shard) with trust.

use std::path::Path;
use std::sync::Arc;

use super::AppError;
use super::invocation::{self, Outputs};
use super::resolve;
use crate::backend::channel::Channel;
use crate::cli::{self, Exit};
use crate::console;
use crate::matrix::grid::{Comparison, Matrix};
use crate::matrix::identity::{Asked, Identity};
use crate::matrix::shards::ShardPos;
use crate::scenario::Scenario;
use crate::store;
use crate::store::redact::Redactor;

/// Checks that `baseline` was made the way this matrix is (see [`Identity::made_unlike`]);
/// returns how it differs when compared anyway (`--compare-across-settings`). Bad input
/// otherwise, before anything runs.
pub fn compared_across(
    identity: &Identity,
    baseline: Option<&Matrix>,
    path: Option<&Path>,
    on_purpose: bool,
) -> Result<Vec<String>, AppError> {
    let Some(baseline) = baseline else {
        return Ok(vec![]);
    };
    let differences = identity.made_unlike_baseline(baseline.identity.as_ref());
    if differences.is_empty() || on_purpose {
        return Ok(differences);
    }
    Err(AppError::bad_input(format!(
        "{}: {}: its verdicts say nothing about this matrix's (pass --compare-across-settings to compare anyway)",
        path.map(|p| p.display().to_string()).unwrap_or_default(),
        differences.join("; ")
    )))
}

/// Which matrix a set of runs is: its columns, and (for `matrix` and `merge`) the whole it
/// belongs to and the shard it is.
pub struct MatrixOf<'a> {
    pub columns: &'a [String],
    pub identity: Option<&'a Identity>,
    pub shard: Option<ShardPos>,
}

impl MatrixOf<'_> {
    pub fn matrix(&self, results: &[crate::classify::result::RunResult]) -> Matrix {
        Matrix::build(results, self.columns).of_matrix(self.identity.cloned(), self.shard)
    }
}

/// What a matrix or a merge ends with, in `dir`: the matrix of what ran, the baseline it is
/// compared with (read from `baseline_path`), how that baseline was made otherwise
/// (`across`), and what an incomplete merge lacks (`missing`).
pub struct Concluding<'a> {
    pub dir: &'a Path,
    pub junit: Option<&'a Path>,
    pub grid: &'a Matrix,
    pub baseline: Option<&'a Matrix>,
    pub baseline_path: Option<&'a Path>,
    pub across: &'a [String],
    pub missing: Option<&'a [crate::classify::result::MissingPart]>,
}

/// The end a matrix and a merge share: the runs' outputs (summary, JUnit), compared with the
/// baseline when there is one; the matrix written and printed; the page. Returns the summary
/// and the comparison's exit code, if any.
pub fn conclude(
    c: &Concluding,
    ran: &invocation::Ran,
) -> Result<(crate::classify::result::Summary, Option<Exit>), AppError> {
    let comparison = c.baseline.map(|base| {
        let mut comparison = Comparison::of(c.grid, base);
        comparison.across_settings = c.across.to_vec();
        comparison
    });
    let file = baseline_name(c.baseline_path);
    let against = comparison.as_ref().map(|comparison| invocation::Baseline {
        comparison,
        current: c.grid,
        file: &file,
    });
    let matrix = invocation::MatrixParts {
        columns: c.grid.column_heads(),
        missing: c.missing.unwrap_or_default().to_vec(),
    };
    let summary = invocation::finish_against(
        &Outputs {
            dir: c.dir,
            junit: c.junit,
            table: false,
            summary: true,
            index: false,
            extra_cases: &[],
        },
        ran,
        against.as_ref(),
        Some(&matrix),
    )?;
    let compared = finish_matrix(c.dir, c.grid, comparison.as_ref())?;
    // Why cells failed and why drafts were written, and how to file each.
    let notes = c.grid.notes();
    if !notes.is_empty() {
        console::say(console::printable_lines(notes.trim()));
    }
    for line in crate::report::draft_lines(c.dir, &summary) {
        console::say(console::printable(&line));
    }
    invocation::write_index(c.dir, &summary, ran)?;
    Ok((summary, compared))
}

/// Writes and prints the matrix of what ran (the changed cells first when there is a
/// baseline); returns the comparison's exit code, if there was a baseline.
fn finish_matrix(
    dir: &Path,
    grid: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<Option<Exit>, AppError> {
    let compared = comparison.map(comparison_code);
    write_matrix(dir, grid, comparison)?;
    console::say(grid.table(
        console::human_is_terminal(),
        console::human_width().unwrap_or(170),
        comparison,
    ));
    Ok(compared)
}

/// The baseline file as the marks name it: its file name (a CI's path says little).
fn baseline_name(path: Option<&Path>) -> String {
    path.map(|p| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| p.display().to_string())
    })
    .unwrap_or_default()
}

/// Prints the comparison's changed cells and maps it to the documented exit code: a
/// regression or a lost cell fails.
pub fn comparison_code(comparison: &Comparison) -> Exit {
    for line in comparison.lines() {
        console::say(line);
    }
    if comparison.fails() {
        Exit::Regression
    } else if comparison.improvements() > 0 {
        Exit::Improvement
    } else {
        Exit::Ok
    }
}

pub fn write_matrix(
    dir: &Path,
    matrix: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<(), AppError> {
    let r = Redactor::basic();
    store::write_json(&dir.join("matrix.json"), &r, matrix)?;
    store::write_atomic(
        &dir.join("matrix.md"),
        r.text(&matrix.markdown(comparison)).as_bytes(),
    )?;
    if let Some(c) = comparison {
        store::write_json(&dir.join("baseline-comparison.json"), &r, c)?;
    }
    Ok(())
}

/// A matrix.json (a baseline, a shard's output): unreadable, malformed or untrustworthy (see
/// `matrix::trust`) is bad input.
pub fn read_matrix(path: &Path) -> Result<Matrix, AppError> {
    let bytes = super::resolve::read_results_file(path)?;
    let matrix: Matrix = serde_json::from_slice(&bytes).map_err(|e| {
        AppError::bad_input(format!(
            "{}: not a wakeprobe matrix.json: {e}",
            path.display()
        ))
    })?;
    refuse(path, crate::matrix::trust::problems(&matrix))?;
    Ok(matrix)
}

/// Bad input naming `path` and its problems, if it has any.
pub fn refuse(path: &Path, problems: Vec<String>) -> Result<(), AppError> {
    if problems.is_empty() {
        return Ok(());
    }
    Err(AppError::bad_input(format!(
        "{}: {}",
        path.display(),
        problems.join("; ")
    )))
}

/// The whole matrix an invocation asks for, whichever shard of it runs
/// ([`Identity::of`]), with the flags that change how every run is made.
pub fn identity_of(
    args: &cli::MatrixArgs,
    scenarios: &[Arc<Scenario>],
    planned: &[resolve::Planned],
    resolved: &[(String, String, Option<Channel>)],
) -> Identity {
    let exec = &args.exec;
    let mut settings: Vec<String> = exec
        .driver
        .iter()
        .map(|d| format!("--driver {d}"))
        .collect();
    if exec.explore {
        settings.push("--explore".into());
    }
    settings.extend(exec.faults.iter().map(|f| format!("--fault {f}")));
    settings.extend(exec.cli_args.iter().map(|a| format!("--cli-arg={a}")));
    let sdk = crate::backend::sdk::SdkVersions {
        ts: exec.sdk_version.clone(),
        py: exec.sdk_py_version.clone(),
    };
    let mut planned: Vec<_> = planned
        .iter()
        .map(|p| {
            let t = &p.target;
            (
                t.scenario.name.clone(),
                t.variant.clone(),
                p.plan.driver.mode.row().host,
            )
        })
        .collect();
    // A variant planned on two runtimes (its plans side by side) is one row of cells.
    planned.dedup();
    Identity::of(&Asked {
        scenarios,
        variants: &exec.variants,
        sets: &exec.sets,
        planned: &planned,
        versions: resolved,
        sim_versions: &args.sim_versions,
        settings,
        sdk: &sdk,
        repeat: exec.repeat,
    })
}
