//! `wakeprobe baseline update MATRIX`: adopt a matrix as the baseline, on purpose, printing
//! what changes. A file in the baseline's place that is not a matrix is never overwritten, and
//! a matrix that could mislead a comparison (a schema this wakeprobe does not know, a cell
//! twice, a name that is not a plain file name, no identity) is never written.

use std::path::Path;

use super::conclude::read_matrix;
use super::{AppError, AppResult};
use crate::cli::Exit;
use crate::matrix::grid::Comparison;
use crate::store;
use crate::store::redact::Redactor;

/// `wakeprobe baseline update MATRIX [--baseline FILE]`
pub fn update(matrix: &Path, baseline: &Path) -> AppResult {
    let new = read_matrix(matrix)?;
    // Only a matrix a comparison can trust becomes the baseline.
    super::conclude::refuse(matrix, crate::matrix::trust::baseline_problems(&new))?;
    if baseline.exists() {
        let old = read_matrix(baseline).map_err(|e| {
            AppError::bad_input(format!(
                "{}; refusing to overwrite it with a baseline",
                e.message
            ))
        })?;
        println!(
            "updating {} (was: {} cells)",
            baseline.display(),
            old.cells.len()
        );
        for line in Comparison::of(&new, &old).lines() {
            println!("  {line}");
        }
    } else {
        println!("writing a new baseline {}", baseline.display());
    }
    store::write_json(baseline, &Redactor::basic(), &new)?;
    println!(
        "{} now holds {} cells from {}",
        baseline.display(),
        new.cells.len(),
        matrix.display()
    );
    Ok(Exit::Ok)
}
